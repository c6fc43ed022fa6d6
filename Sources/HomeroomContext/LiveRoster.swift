import HomeroomCore

/// The roster a UI draws, kept up to date from the change sets instead of rebuilt and
/// sorted from the whole room every frame. A frame costs what changed since the last
/// one (each changed user's row; re-placed by binary search when its name or role
/// changed) plus the page it shows. When something every row depends on changes (the
/// room's type or limits, mute-all, the room's mutes, hand raising, breakout groups) every row is recomputed in place,
/// without sorting; the students are sorted again only on the first frame or when many
/// of them moved at once.
///
/// A frame is cut from one copy of the replica: every row is as of that copy, but for a
/// change whose set has not been noted yet (the client notes it right after applying
/// it, so the next frame draws it). `ReadModel.snapshot` (the whole roster, sorted) is
/// the reference: `LiveRosterTests` checks the two agree after every step of seeded
/// workloads. Public for UIs that keep a replica of their own (a `RoomClient` without
/// the contexts): feed it each change set after applying it, and draw its snapshots.
public struct LiveRoster: Sendable {
    /// A student's place off the stage: by name (natural order, its key made once), then by id.
    private struct NameKey {
        var name: NaturalOrder.Key
        var user: UserID
        init(name: String, user: UserID) {
            self.name = NaturalOrder.Key(name)
            self.user = user
        }
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
    /// What change sets named since the last frame. A client notes into this (a small
    /// lock of its own, `ClassroomSession`), never into the roster a frame is being
    /// made from, so applying deltas never waits for a frame.
    public struct Notes: Sendable {
        var touched: Set<UserID> = []
        /// Every row depends on what changed: recompute them all (in place, no sort).
        var everyRow = false

        public init() {}

        /// Notes what a change set touched (right after it was applied).
        public mutating func note(_ changes: [RoomChange]) {
            for change in changes {
                switch change {
                case let .userJoined(user), let .userLeft(user), let .userUpdated(user, _, _), let .userKnown(user), let .streamUpdated(user, _, _),
                     let .boardUpdated(user, _), let .userRewarded(user, _, _), let .handWaved(user), let .handLowered(user),
                     let .userKicked(user), let .userBanned(user):
                    touched.insert(user)
                case let .coHostsAdded(users), let .coHostsRemoved(users):
                    touched.formUnion(users)
                case .roomInfoUpdated, .allMicrophonesMuted, .deviceMuteUpdated, .handRaisingUpdated, .breakoutUpdated:
                    everyRow = true
                case .classStateUpdated, .roomClosed, .roomPropertiesUpdated, .locksUpdated, .userPropertiesUpdated, .invitationUpdated:
                    break
                }
            }
        }

        mutating func merge(_ other: Notes) {
            touched.formUnion(other.touched)
            everyRow = everyRow || other.everyRow
        }
    }

    private var pending = Notes()
    private var built = false
    /// Frames made by a full build (sorted), and by updates only (for tests and metrics).
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
    public mutating func note(_ changes: [RoomChange]) { pending.note(changes) }

    /// Forget everything: the next frame builds afresh (a new client, a new replica).
    public mutating func reset() {
        built = false
        pending = Notes()
    }

    /// The snapshot of `state` at `nowMillis`, its students paged as asked. `notes`: what
    /// was noted elsewhere since the last frame (every change in them is in `state`).
    public mutating func snapshot(_ state: RoomState, nowMillis: UInt64, local: UserInfo, connection: ConnectionState, latencyMicros: Double,
                                  page: (index: Int, size: Int)?, notes: Notes = Notes()) -> RoomSnapshot {
        pending.merge(notes)
        refresh(state, nowMillis: nowMillis)
        let frame = self.frame!
        let rows = self.rows
        let stageStudents = frame.stage.filter { rows[$0]?.info.role == .student }
        let studentPage = self.page(stageStudents: stageStudents, page: page)
        // As the full roster orders them: roster order, then online first, teachers before assistants.
        let moderatorRows = moderators.compactMap { rows[$0] }
            .sorted { a, b in RoomState.rosterPrecedes(a.info.id, a.info.name, b.info.id, b.info.name, stageRank: frame.stageRank) }
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
        snapshot.invitations = ReadModel.pendingInvitations(state, nowMillis: nowMillis)
        return snapshot
    }

    private mutating func refresh(_ state: RoomState, nowMillis: UInt64) {
        let next = state.rosterFrame(nowMillis: nowMillis)
        let notes = pending
        pending = Notes()
        defer { frame = next }
        guard built, let frame else {
            build(state, next)
            built = true
            rebuilds += 1
            return
        }
        updates += 1
        if notes.everyRow {
            update(state.users.keys, state, next)
            return
        }
        // Rows named by the change sets, and those the frame moved on or off the stage or
        // its waiting list: a carousel's turn changes with the clock alone, and its
        // candidates with other users' cameras. (Hands need no diff: the change sets name
        // everyone whose place in the hand list moved.) And every row on the stage, each
        // frame (the stage is small): a user there by a carousel's turn has camera and
        // microphone states the change sets do not follow (they derive them from the
        // stage as written).
        var changed = notes.touched
        changed.formUnion(Set(frame.stage).symmetricDifference(next.stage))
        changed.formUnion(Set(frame.stageWaiting).symmetricDifference(next.stageWaiting))
        changed.formUnion(next.stage)
        update(changed, state, next)
    }

    /// Every row from `state`, the students sorted.
    private mutating func build(_ state: RoomState, _ frame: RosterFrame) {
        rows = [:]
        rows.reserveCapacity(state.users.count)
        students = []
        moderators = []
        online = []
        observersOnline = []
        for (user, record) in state.users where record.isKnown {
            if let key = place(user, record, state, frame) { students.append(key) }
        }
        students.sort { $0.precedes($1) }
    }

    /// Recomputes these users' rows; students whose name changed (or who came or went)
    /// are re-placed by binary search, or, when many moved, all sorted again.
    private mutating func update(_ users: some Sequence<UserID>, _ state: RoomState, _ frame: RosterFrame) {
        var moved: [(from: NameKey?, to: NameKey?)] = []
        for user in users {
            let old = rows.removeValue(forKey: user)
            let before = old.flatMap { $0.info.role == .student ? NameKey(name: $0.info.name, user: user) : nil }
            if let old, old.info.role == .teacher || old.info.role == .assistant { moderators.remove(user) }
            online.remove(user)
            observersOnline.remove(user)
            var after: NameKey?
            if let record = state.users[user], record.isKnown { after = place(user, record, state, frame) }
            if before?.name != after?.name || (before == nil) != (after == nil) { moved.append((before, after)) }
        }
        guard !moved.isEmpty else { return }
        if moved.count > max(64, students.count / 8) {
            students = rows.values.filter { $0.info.role == .student }.map { NameKey(name: $0.info.name, user: $0.info.id) }
            students.sort { $0.precedes($1) }
            return
        }
        for (from, _) in moved {
            guard let from else { continue }
            let at = position(of: from)
            if at < students.count, students[at].user == from.user { students.remove(at: at) }
        }
        for (_, to) in moved {
            guard let to else { continue }
            students.insert(to, at: position(of: to))
        }
    }

    /// Records one known user's row; returns its name key when it is a student with a row.
    private mutating func place(_ user: UserID, _ record: UserRecord, _ state: RoomState, _ frame: RosterFrame) -> NameKey? {
        let row = state.rosterRow(user, record, in: frame)
        if row.online { online.insert(user) }
        if record.isBanned { return nil }
        rows[user] = ReadModel.row(row)
        switch row.role {
        case .student: return NameKey(name: row.name, user: user)
        case .teacher, .assistant: moderators.insert(user)
        case .observer: if row.online { observersOnline.insert(user) }
        default: break
        }
        return nil
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
