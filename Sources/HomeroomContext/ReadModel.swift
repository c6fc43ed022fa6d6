import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Builds the contexts' read models from a replica. Internal: UIs see only the results.
enum ReadModel {
    static func userInfo(_ state: RoomState, _ user: UserID) -> UserInfo {
        guard let record = state.users[user], record.isKnown else { return UserInfo(id: user, name: "", role: .student) }
        return UserInfo(id: user, name: record.name.value, role: record.role.value)
    }

    static func roomInfo(_ state: RoomState) -> RoomInfo {
        var info = RoomInfo(id: state.roomID, name: state.name.value, type: state.type.value,
                            stageLimit: state.type.value == .oneToOne ? 2 : Int(state.stageLimit.value), handLimit: Int(state.handLimit.value))
        info.mutedDevices = Set(Device.allCases.filter { state.mute($0).isClosed })
        info.handRaising = state.handRaisingPolicy
        return info
    }

    /// `user`'s latest invitation to the stage, in any status.
    static func invitation(_ state: RoomState, _ user: UserID, nowMillis: UInt64 = WallClock.nowMillis()) -> InvitationInfo? {
        guard let invitation = state.invitations[user] else { return nil }
        // A withdrawn invitation (a stage write or a kick since) is over: shown as expired.
        var status = invitation.status(nowMillis: nowMillis)
        if status == .pending && state.openInvitation(for: user) == nil { status = .expired }
        return InvitationInfo(user: userInfo(state, user), inviter: invitation.inviter.isEmpty ? nil : userInfo(state, invitation.inviter),
                              seconds: invitation.seconds, expiresAtMillis: invitation.expiresAtMillis, status: status)
    }

    /// The invitations still waiting for an answer, by invited user.
    static func pendingInvitations(_ state: RoomState, nowMillis: UInt64 = WallClock.nowMillis()) -> [InvitationInfo] {
        // Every frame: only the unanswered ones still open by this clock are looked at closely.
        state.invitations.filter { $0.value.answer == nil && nowMillis <= $0.value.expiresAtMillis }.keys.sorted()
            .compactMap { invitation(state, $0, nowMillis: nowMillis) }.filter { $0.status == .pending }
    }

    static func classInfo(_ state: RoomState) -> ClassInfo {
        ClassInfo(state: state.classState.state,
                  sinceMillis: state.classState.stamp == .origin ? 0 : state.classState.stamp.clock.millis,
                  schedule: state.schedule.value)
    }

    static func row(_ row: RosterRow) -> UserRow {
        UserRow(info: UserInfo(id: row.user, name: row.name, role: row.role), online: row.online, onStage: row.onStage,
                waitingForStage: row.waitingForStage, boardGranted: row.boardGranted, camera: row.camera,
                microphone: row.microphone, rewards: row.rewards, handRaised: row.handRaised, group: row.group)
    }

    static func rows(_ state: RoomState, _ query: UserQuery) -> [UserRow] {
        state.roster(roles: query.roles, includeOffline: query.includeOffline, nowMillis: WallClock.nowMillis()).rows.map(row)
    }

    static func page(_ rows: [UserRow], index: Int, size: Int) -> UserPage {
        let size = max(1, size)
        let pages = max(1, (rows.count + size - 1) / size)
        let index = min(max(0, index), pages - 1)
        let start = min(rows.count, index * size)
        let end = min(rows.count, start + size)
        return UserPage(rows: Array(rows[start..<end]), index: index, size: size, total: rows.count)
    }

    /// The whole roster, built and sorted from the replica: the reference `LiveRoster`
    /// (what UIs get, kept from the change sets) is checked against.
    static func snapshot(_ state: RoomState, local: UserInfo, connection: ConnectionState, latencyMicros: Double,
                         page: (index: Int, size: Int)?, nowMillis: UInt64 = WallClock.nowMillis()) -> RoomSnapshot {
        let roster = state.roster(nowMillis: nowMillis)
        let all = roster.rows.map(row)
        var byID: [UserID: UserRow] = [:]
        byID.reserveCapacity(all.count)
        for row in all { byID[row.id] = row }
        let moderators = all.filter { $0.info.role == .teacher || $0.info.role == .assistant }
            .sorted { a, b in a.online != b.online ? a.online : (a.info.role != b.info.role ? a.info.role > b.info.role : false) }
        let students = all.filter { $0.info.role == .student }
        let studentPage = page.map { Self.page(students, index: $0.index, size: $0.size) }
            ?? UserPage(rows: students, index: 0, size: max(1, students.count), total: students.count)
        func info(_ user: UserID) -> UserInfo { byID[user]?.info ?? userInfo(state, user) }
        var snapshot = RoomSnapshot(
            room: roomInfo(state), classInfo: classInfo(state), localUser: local, connection: connection, latencyMicros: latencyMicros,
            moderators: moderators, students: studentPage,
            stage: roster.stage.compactMap { byID[$0] }, stageWaiting: roster.stageWaiting.compactMap { byID[$0] },
            raisedHands: roster.raisedHands.map(info), waitingHands: roster.waitingHands.map(info),
            onlineCount: roster.onlineCount, observerCount: all.filter { $0.info.role == .observer && $0.online }.count,
            carousel: roster.carousel.flatMap { settings in roster.carouselTurn.map { CarouselStatus(settings, $0) } })
        snapshot.breakout = roster.breakout
        snapshot.invitations = pendingInvitations(state, nowMillis: nowMillis)
        return snapshot
    }

    static func properties(_ registers: [String: Register<PropertyValue>]) -> [String: String] {
        var result: [String: String] = [:]
        for (key, register) in registers {
            if let bytes = register.value.bytes { result[key] = String(decoding: bytes, as: UTF8.self) }
        }
        return result
    }

    /// Every live key with its revision, writer and cause, by key.
    static func entries(_ registers: [String: Register<PropertyValue>]) -> [PropertyEntry] {
        registers.keys.sorted().compactMap { key in
            let value = registers[key]!.value
            guard let bytes = value.bytes else { return nil }
            return PropertyEntry(key: key, value: String(decoding: bytes, as: UTF8.self), revision: value.revision,
                                 operatorID: value.operatorID, cause: value.cause)
        }
    }
}
