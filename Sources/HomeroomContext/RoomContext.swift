import HomeroomCore
import HomeroomNode

/// The room: join and leave, room info, class state and schedule, room properties
/// (AgoraEduRoomContext). Writes need a teacher or an assistant; refusals carry codes.
public final class RoomContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any RoomHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any RoomHandler) { session.unregister(handler) }

    /// Joins through the first node that answers and follows the room from then on.
    /// Fails with `unavailable` when no node answers, `banned`, `room-full`, ...
    public func join() throws(ContextError) { try session.join() }

    /// Leaves (best effort) and closes the link; `join()` again to come back.
    public func leave() { session.leave() }

    public var isJoined: Bool { session.isJoined }

    // MARK: - Room info

    public var info: RoomInfo { ReadModel.roomInfo(session.replica) }

    public func setName(_ name: String) throws(ContextError) {
        guard name.utf8.count <= 256 else { throw .invalidArgument("a room name is at most 256 bytes") }
        try session.write(.setRoomName(name))
    }

    public func setType(_ type: RoomType) throws(ContextError) { try session.write(.setRoomType(type)) }

    public func setStageLimit(_ limit: Int) throws(ContextError) {
        guard (0...100_000).contains(limit) else { throw .invalidArgument("a stage limit is 0 to 100000, not \(limit)") }
        try session.write(.setStageLimit(UInt32(limit)))
    }

    public func setHandLimit(_ limit: Int) throws(ContextError) {
        guard (0...100_000).contains(limit) else { throw .invalidArgument("a hand limit is 0 to 100000, not \(limit)") }
        try session.write(.setHandLimit(UInt32(limit)))
    }

    // MARK: - Class state and schedule

    public var classInfo: ClassInfo { ReadModel.classInfo(session.replica) }

    /// before -> during. Class state never moves back (`class-state-backwards`).
    public func startClass() throws(ContextError) { try session.write(.setClassState(.during)) }

    /// -> after. The room closes its close delay later (`room-closed`).
    public func endClass() throws(ContextError) { try session.write(.setClassState(.after)) }

    public func setSchedule(_ schedule: Schedule) throws(ContextError) { try session.write(.setSchedule(schedule)) }

    // MARK: - Room properties

    /// Room properties as UTF-8 text (deleted keys are absent).
    public var properties: [String: String] { ReadModel.properties(session.replica.properties) }

    public func updateProperties(_ properties: [String: String], cause: String = "") throws(ContextError) {
        for key in properties.keys.sorted() {
            try checkKey(key)
            try session.write(.setRoomProperty(key: key, value: Array(properties[key]!.utf8), cause: cause))
        }
    }

    public func deleteProperties(_ keys: [String], cause: String = "") throws(ContextError) {
        for key in keys {
            try checkKey(key)
            try session.write(.setRoomProperty(key: key, value: nil, cause: cause))
        }
    }
}

extension RoomContext {
    /// Room properties with their revisions, writers and causes, by key.
    public var propertyEntries: [PropertyEntry] { ReadModel.entries(session.replica.properties) }

    public func property(_ key: String) -> PropertyEntry? { propertyEntries.first { $0.key == key } }

    /// The room properties' set revision (Signaling's major revision): the sum of their
    /// keys' revisions, deleted keys included; one more with every write that stands.
    public var propertySetRevision: UInt64 { session.replica.propertySetRevision(scope: .room) }

    /// Writes (value nil: deletes) one room property; with `ifRevision`, only if the key
    /// is still at that revision (0: never written), with `ifSetRevision` only if the
    /// whole set is still at that set revision; else refused with `revision-mismatch`.
    /// Under a partition two such writes can both be accepted; the merge keeps one, and
    /// the loser's pool hears `onPropertyConflict` (docs/MESSAGING.md). With `fence`
    /// (`LockContext.acquire`), only while that grant holds; it then outranks every
    /// write of the key made under an earlier grant.
    @discardableResult
    public func updateProperty(_ key: String, value: String?, cause: String = "", ifRevision: UInt64? = nil,
                               ifSetRevision: UInt64? = nil, fence: LockFence? = nil) throws(ContextError) -> PropertyWriteReceipt {
        try checkKey(key)
        return try session.writeProperty(owner: nil, key: key) { client throws(ClientError) in
            try client.setRoomProperty(key, value: value.map { Array($0.utf8) }, cause: cause, ifRevision: ifRevision, ifSetRevision: ifSetRevision,
                                       fence: fence)
        }
    }

    /// Whether a write is still what the property holds or was built upon (true), was
    /// overwritten by a write that never saw it (false), or cannot be told yet (nil).
    public func isPropertyWriteKept(_ receipt: PropertyWriteReceipt) -> Bool? {
        (try? session.client())?.propertyWriteKept(receipt.result)
    }
}

func checkKey(_ key: String) throws(ContextError) {
    guard !key.isEmpty, key.utf8.count <= 128 else { throw .invalidArgument("a property key is 1 to 128 bytes") }
}
