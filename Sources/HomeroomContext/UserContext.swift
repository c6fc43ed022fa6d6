import HomeroomCore
import HomeroomNode

/// Users: the local user, user lists (paged for large rooms), co-hosts (the stage),
/// whiteboard grants, rewards, kick and ban, hands, user properties (AgoraEduUserContext).
public final class UserContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any UserHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any UserHandler) { session.unregister(handler) }

    // MARK: - Reading

    public var localUser: UserInfo { session.localUser }

    /// A user the room knows (joined at least once), or nil.
    public func userInfo(_ user: UserID) -> UserInfo? {
        guard session.replica.users[user]?.isKnown == true else { return nil }
        return ReadModel.userInfo(session.replica, user)
    }

    /// The roster row of one user, or nil (unknown or banned).
    public func row(_ user: UserID) -> UserRow? {
        ReadModel.rows(session.replica, .everyone).first { $0.id == user }
    }

    /// Users matching `query`: on stage first (in stage order), then by name.
    public func userList(_ query: UserQuery = .everyone) -> [UserRow] { ReadModel.rows(session.replica, query) }

    /// One page of `userList(query)`; `index` is zero-based and clamped to the last page.
    public func userPage(_ query: UserQuery = .students, index: Int, size: Int = 50) -> UserPage {
        ReadModel.page(userList(query), index: index, size: size)
    }

    /// Users on stage, in the order every replica agrees on.
    public var coHostList: [UserRow] {
        let replica = session.replica
        let rows = Dictionary(ReadModel.rows(replica, .everyone).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        return replica.stageWinners.compactMap { rows[$0] }
    }

    /// Promoted while the stage was full: waiting for a seat, in order.
    public var stageWaitingList: [UserRow] {
        let replica = session.replica
        let rows = Dictionary(ReadModel.rows(replica, .everyone).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        return replica.stageWaiting.compactMap { rows[$0] }
    }

    public var raisedHands: [UserInfo] {
        let replica = session.replica
        return replica.raisedHands.map { ReadModel.userInfo(replica, $0) }
    }

    // MARK: - Co-hosts (teacher, assistant)

    /// Puts a user on stage. `stage-full` when every seat is taken.
    public func addCoHost(_ user: UserID) throws(ContextError) { try session.write(.setStage(user: user, on: true)) }

    public func addCoHosts(_ users: [UserID]) throws(ContextError) {
        for user in users { try addCoHost(user) }
    }

    public func removeCoHost(_ user: UserID) throws(ContextError) { try session.write(.setStage(user: user, on: false)) }

    /// Takes everyone off the stage, and out of the waiting list; returns how many.
    @discardableResult
    public func removeAllCoHosts() throws(ContextError) -> Int {
        let replica = session.replica
        let users = replica.stageWinners + replica.stageWaiting
        for user in users { try removeCoHost(user) }
        return users.count
    }

    // MARK: - Whiteboard, rewards, kick and ban (teacher, assistant)

    public func setBoard(_ user: UserID, granted: Bool) throws(ContextError) {
        try session.write(.setBoard(user: user, granted: granted))
    }

    /// Adds to a user's rewards; concurrent rewards add up, a retried one counts once.
    public func reward(_ user: UserID, amount: Int = 1) throws(ContextError) {
        guard (1...1_000).contains(amount) else { throw .invalidArgument("a reward is 1 to 1000, not \(amount)") }
        try session.write(.reward(user: user, amount: Int32(amount)))
    }

    public func reward(_ users: [UserID], amount: Int = 1) throws(ContextError) {
        for user in users { try reward(user, amount: amount) }
    }

    /// Kicks a user out: once (`forever: false`, the user may join again) or for good (a ban).
    public func kickOut(_ user: UserID, forever: Bool = false) throws(ContextError) {
        try session.write(forever ? .ban(user: user) : .kick(user: user))
    }

    // MARK: - Hands

    /// Raises the local user's hand. `hand-limit-reached` when too many are up,
    /// `hand-raising-off` while the teacher has switched hand raising off. With auto-stage
    /// on and a seat free, a student's raise puts it on stage instead (`handRaising`).
    public func handsWave() throws(ContextError) { try session.write(.setHand(user: session.config.user, raised: true)) }

    /// Lowers the local user's hand.
    public func handsDown() throws(ContextError) { try session.write(.setHand(user: session.config.user, raised: false)) }

    /// Lowers someone's hand (teacher, assistant; nobody raises a hand for another).
    public func lowerHand(of user: UserID) throws(ContextError) { try session.write(.setHand(user: user, raised: false)) }

    /// Teacher, assistant: switches hand raising on or off (Flexible Classroom's
    /// `allowHandsUp(state, autoStage)`). Off: students' raises are refused
    /// `hand-raising-off` and raised hands are lowered (they stay down when it is switched
    /// on again). On with `autoStage`: a student's raise puts it on stage by itself while a
    /// seat is free (in the stage's order); with the stage full, the hand stays raised.
    public func allowHandsUp(_ allowed: Bool, autoStage: Bool = false) throws(ContextError) {
        try session.write(.setHandRaising(allowed: allowed, autoStage: autoStage))
    }

    /// Hand raising as the room has it now: on or off, and auto-stage.
    public var handRaising: HandRaisingPolicy { session.replica.handRaisingPolicy }

    // MARK: - Invitations to the stage

    /// Teacher, assistant: invites `user` to the stage for `seconds` (5 to 600; Flexible
    /// Classroom's `invitePodium(user, duration)`). It replaces an earlier invitation of
    /// that user; refused `invalid` for a user already on stage.
    public func inviteToStage(_ user: UserID, seconds: UInt32 = StageInvitation.defaultSeconds) throws(ContextError) {
        try session.write(.inviteToStage(user: user, seconds: seconds))
    }

    /// Accepts the local user's invitation: it is then on stage (the invitation is what
    /// lets a student put itself there). Refused `stage-full` when no seat is free,
    /// `no-invitation`, `invitation-expired` or `invitation-answered` otherwise.
    public func acceptInvitation() throws(ContextError) { try session.write(.answerInvitation(accept: true)) }

    /// Declines the local user's invitation (refused as `acceptInvitation` is, but never `stage-full`).
    public func declineInvitation() throws(ContextError) { try session.write(.answerInvitation(accept: false)) }

    /// The local user's latest invitation, in any status (nil: never invited).
    public var invitation: InvitationInfo? { ReadModel.invitation(session.replica, session.config.user) }

    /// Every invitation waiting for an answer now (a teacher's view).
    public var pendingInvitations: [InvitationInfo] { ReadModel.pendingInvitations(session.replica) }

    // MARK: - Name and properties

    public func updateName(_ name: String) throws(ContextError) {
        guard !name.isEmpty, name.utf8.count <= 128 else { throw .invalidArgument("a display name is 1 to 128 bytes") }
        try session.write(.setName(user: session.config.user, name: name))
    }

    /// A user's properties as UTF-8 text (deleted keys are absent).
    public func properties(of user: UserID) -> [String: String] {
        ReadModel.properties(session.replica.users[user]?.properties ?? [:])
    }

    /// Sets properties of a user: the local user's own, or anyone's for a teacher or an assistant.
    public func updateProperties(of user: UserID, _ properties: [String: String], cause: String = "") throws(ContextError) {
        for key in properties.keys.sorted() {
            try checkKey(key)
            try session.write(.setUserProperty(user: user, key: key, value: Array(properties[key]!.utf8), cause: cause))
        }
    }

    public func deleteProperties(of user: UserID, keys: [String], cause: String = "") throws(ContextError) {
        for key in keys {
            try checkKey(key)
            try session.write(.setUserProperty(user: user, key: key, value: nil, cause: cause))
        }
    }

    /// A user's properties with their revisions, by key.
    public func propertyEntries(of user: UserID) -> [PropertyEntry] {
        ReadModel.entries(session.replica.users[user]?.properties ?? [:])
    }

    /// A user's property set revision: the sum of the revisions of its keys.
    public func propertySetRevision(of user: UserID) -> UInt64 { session.replica.propertySetRevision(scope: .user(user)) }

    /// Writes (value nil: deletes) one property of a user; with `ifRevision`, only if the
    /// key is still at that revision (0: never written), with `ifSetRevision` only if the
    /// user's whole set is still at that set revision; else refused with `revision-mismatch`.
    @discardableResult
    public func updateProperty(of user: UserID, _ key: String, value: String?, cause: String = "",
                               ifRevision: UInt64? = nil, ifSetRevision: UInt64? = nil, fence: LockFence? = nil) throws(ContextError) -> PropertyWriteReceipt {
        try checkKey(key)
        return try session.writeProperty(owner: user, key: key) { client throws(ClientError) in
            try client.setUserProperty(of: user, key, value: value.map { Array($0.utf8) }, cause: cause, ifRevision: ifRevision,
                                       ifSetRevision: ifSetRevision, fence: fence)
        }
    }
}
