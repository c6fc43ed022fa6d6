import HomeroomCore

/// The roster a UI draws, kept up to date from the change sets instead of rebuilt and
/// sorted from the whole room every frame. A frame costs what changed since the last
/// one (each changed user's row, re-placed by binary search) plus the page it shows;
/// the whole roster is rebuilt only when something every row depends on changes (the
/// room's type or limits, mute-all, breakout groups), or many users did. A node
/// declared down names the users it hosted (they leave), so it costs their rows only.
///
/// A frame is cut from one copy of the replica: every row is as of that copy, but for a
/// change whose set has not been noted yet (the client notes it right after applying
/// it, so the next frame draws it). `ReadModel.snapshot` (the whole roster, sorted) is
/// the reference: `LiveRosterTests` checks the two agree after every step of seeded
/// workloads. Public for UIs that keep a replica of their own (a `RoomClient` without
/// the contexts): feed it each change set after applying it, and draw its snapshots.
public struct LiveRoster: Sendable {
    /// A student's place off the stage: by name (natural order), then by id.
    private struct NameKey {
        var name: String
        var user: UserID
        func precedes(_ other: NameKey) -> Bool { RoomState.namePrecedes(name, user, other.name, other.user) }
    }

    /// Known, not banned users' rows.
    private var rows: [UserID: UserRow] = [:]
    /// Every student with a row, by name then id.
    private var students: [NameKey] = []
    private var moderators: Set<UserID> = []
    /// Known users online (banned ones too, as the full roster counts them).
    private var online: Set<UserID> = []
    private var observersOnline: Set<UserID> = []
    private var frame: RosterFrame?
    /// Users whose change sets came since the last frame.
    private var touched: Set<UserID> = []
    private var rebuildDue = true
    /// Frames made by a full rebuild, and by updates only (for tests and metrics).
    public private(set) var rebuilds = 0
    public private(set) var updates = 0

    public init() {}

    /// The reference: the whole roster built and sorted from `state`, as a frame was made
    /// before (what `snapshot` must equal; for tests and benchmarks).
    public static func rebuilt(_ state: RoomState, nowMillis: UInt64, local: UserInfo, connection: ConnectionState,
                               latencyMicros: Double, page: (index: Int, size: Int)?) -> RoomSnapshot {
        ReadModel.snapshot(state, local: local, connection: connection, latencyMicros: latencyMicros, page: page, nowMillis: nowMillis)
    }

    /// Notes what a change set touched (from the client, right after it applied it).
    public mutating func note(_ changes: [RoomChange]) {
        for change in changes {
            switch change {
            case let .userJoined(user), let .userLeft(user), let .userUpdated(user), let .streamUpdated(user, _, _),
                 let .boardUpdated(user, _), let .userRewarded(user, _, _), let .handWaved(user), let .handLowered(user),
                 let .userKicked(user), let .userBanned(user):
                touched.insert(user)
            case let .coHostsAdded(users), let .coHostsRemoved(users):
                touched.formUnion(users)
            case .roomInfoUpdated, .allMicrophonesMuted, .breakoutUpdated:
                rebuildDue = true
            case .classStateUpdated, .roomPropertiesUpdated, .locksUpdated, .userPropertiesUpdated:
                break
            }
        }
    }

    /// Forget everything: the next frame rebuilds (a new client, a new replica).
    public mutating func reset() { rebuildDue = true }

    /// The snapshot of `state` at `nowMillis`, its students paged as asked.
    public mutating func snapshot(_ state: RoomState, nowMillis: UInt64, local: UserInfo, connection: ConnectionState, latencyMicros: Double,
                           page: (index: Int, size: Int)?) -> RoomSnapshot {
        refresh(state, nowMillis: nowMillis)
        let frame = self.frame!
        let rows = self.rows
        let stageStudents = frame.stage.filter { rows[$0]?.info.role == .student }
        let studentPage = self.page(stageStudents: stageStudents, page: page)
        // As the full roster orders them: roster order, then online first, teachers before assistants.
        let moderatorRows = moderators.compactMap { rows[$0] }
            .sorted { a, b in Self.precedes(a, b, frame) }
            .sorted { a, b in a.online != b.online ? a.online : (a.info.role != b.info.role ? a.info.role > b.info.role : false) }
        func info(_ user: UserID) -> UserInfo { rows[user]?.info ?? ReadModel.userInfo(state, user) }
        let carousel = state.carousel.value.running ? state.carousel.value : nil
        var snapshot = RoomSnapshot(
            room: ReadModel.roomInfo(state), classInfo: ReadModel.classInfo(state), localUser: local, connection: connection,
            latencyMicros: latencyMicros, moderators: moderatorRows, students: studentPage,
            stage: frame.stage.compactMap { rows[$0] }, stageWaiting: frame.stageWaiting.compactMap { rows[$0] },
            raisedHands: frame.raisedHands.map(info), waitingHands: frame.waitingHands.map(info),
            onlineCount: online.count, observerCount: observersOnline.count,
            carousel: carousel.flatMap { settings in frame.turn.map { CarouselStatus(settings, $0) } })
        snapshot.breakout = state.breakout
        return snapshot
    }

    private static func precedes(_ a: UserRow, _ b: UserRow, _ frame: RosterFrame) -> Bool {
        switch (frame.stageRank[a.info.id], frame.stageRank[b.info.id]) {
        case let (x?, y?): return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return RoomState.namePrecedes(a.info.name, a.info.id, b.info.name, b.info.id)
        }
    }

    private mutating func refresh(_ state: RoomState, nowMillis: UInt64) {
        let next = state.rosterFrame(nowMillis: nowMillis)
        // Rows named by the change sets, and those the frame moved on or off the stage or
        // its waiting list: a carousel's turn changes with the clock alone, and its
        // candidates with other users' cameras. (Hands need no diff: the change sets name
        // everyone whose place in the hand list moved.)
        var changed = touched
        if let frame {
            func moved(_ a: [UserID], _ b: [UserID]) -> Set<UserID> { Set(a).symmetricDifference(b) }
            changed.formUnion(moved(frame.stage, next.stage))
            changed.formUnion(moved(frame.stageWaiting, next.stageWaiting))
        }
        // And every row on the stage, each frame (the stage is small): a user there by a
        // carousel's turn has camera and microphone states the change sets do not follow
        // (they derive them from the stage as written).
        changed.formUnion(next.stage)
        touched = []
        frame = next
        // Many changes at once: one sort beats that many binary-search insertions.
        if rebuildDue || changed.count > max(64, rows.count / 8) {
            rebuild(state, next)
            rebuildDue = false
            rebuilds += 1
            return
        }
        for user in changed { update(user, state, next) }
        updates += 1
    }

    private mutating func rebuild(_ state: RoomState, _ frame: RosterFrame) {
        rows = [:]
        rows.reserveCapacity(state.users.count)
        students = []
        moderators = []
        online = []
        observersOnline = []
        for (user, record) in state.users where record.isKnown { place(user, record, state, frame, sorted: false) }
        students.sort { $0.precedes($1) }
    }

    private mutating func update(_ user: UserID, _ state: RoomState, _ frame: RosterFrame) {
        if let old = rows.removeValue(forKey: user) {
            switch old.info.role {
            case .student:
                let at = position(of: NameKey(name: old.info.name, user: user))
                if at < students.count, students[at].user == user { students.remove(at: at) }
            case .teacher, .assistant: moderators.remove(user)
            default: break
            }
        }
        online.remove(user)
        observersOnline.remove(user)
        if let record = state.users[user], record.isKnown { place(user, record, state, frame, sorted: true) }
    }

    private mutating func place(_ user: UserID, _ record: UserRecord, _ state: RoomState, _ frame: RosterFrame, sorted: Bool) {
        let row = state.rosterRow(user, record, in: frame)
        if row.online { online.insert(user) }
        if record.isBanned { return }
        let userRow = ReadModel.row(row)
        rows[user] = userRow
        switch row.role {
        case .student:
            let key = NameKey(name: row.name, user: user)
            if sorted { students.insert(key, at: position(of: key)) } else { students.append(key) }
        case .teacher, .assistant: moderators.insert(user)
        case .observer: if row.online { observersOnline.insert(user) }
        default: break
        }
    }

    /// Where `key` is, or would go, in `students`.
    private func position(of key: NameKey) -> Int {
        var low = 0, high = students.count
        while low < high {
            let middle = (low + high) / 2
            if students[middle].precedes(key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The students in roster order (on stage first, in stage order; then by name), paged.
    private func page(stageStudents: [UserID], page: (index: Int, size: Int)?) -> UserPage {
        let total = students.count
        let size = page.map { max(1, $0.size) } ?? max(1, total)
        let pages = max(1, (total + size - 1) / size)
        let index = min(max(0, page?.index ?? 0), pages - 1)
        let start = min(total, index * size)
        let end = min(total, start + size)
        var slice: [UserRow] = []
        slice.reserveCapacity(end - start)
        let onStage = Set(stageStudents)
        // Positions (by name) of the students on stage, which the off-stage part skips.
        let skipped = stageStudents.compactMap { user -> Int? in
            guard let row = rows[user] else { return nil }
            let at = position(of: NameKey(name: row.info.name, user: user))
            return at < students.count && students[at].user == user ? at : nil
        }.sorted()
        var cursor = start
        while cursor < end && cursor < stageStudents.count {
            slice.append(rows[stageStudents[cursor]]!)
            cursor += 1
        }
        guard cursor < end else { return UserPage(rows: slice, index: index, size: size, total: total) }
        // The (cursor - stage count)-th student off the stage: its index by name, past
        // the on-stage students that come before it.
        var byName = cursor - stageStudents.count
        for position in skipped where position <= byName { byName += 1 }
        while cursor < end && byName < students.count {
            let user = students[byName].user
            if !onStage.contains(user) {
                slice.append(rows[user]!)
                cursor += 1
            }
            byName += 1
        }
        return UserPage(rows: slice, index: index, size: size, total: total)
    }
}
