// libFuzzer target over the wire decoders and Core's merge.
// Built and run by Fuzz/run.sh; see docs/PROTOCOL.md, "Fuzzing".
//
// Every input is tried as an Envelope, a bare DeltaBatch and a bare RoomPatch.
// Whatever decodes is fed to Core (apply or merge, into an empty room and into
// a populated one) and must encode and decode back to itself: a mismatch is a
// finding (the fuzzer stops with a crash report), as is any crash.
import HomeroomCore
import HomeroomWire

let fuzzLimits: WireLimits = {
    var limits = WireLimits()
    limits.maxMessageBytes = 1 << 20
    limits.maxDecodedBytes = 16 << 20
    return limits
}()

/// A populated room to merge into, so merges meet existing users and registers.
let populatedRoom: RoomState = {
    let node = ReplicaID(0xA01)
    var room = RoomState(roomID: "math-101")
    var sequence: UInt64 = 0
    func apply(_ author: UserID, _ role: Role, _ operation: Operation) {
        sequence += 1
        _ = room.apply(Delta(sequence: sequence, clock: HybridTimestamp(millis: 1_764_000_000_000 + sequence, logical: 0, replica: node),
                             author: author, authorRole: role, authorCounter: sequence, operation: operation))
    }
    apply("teach", .teacher, .joinSession(user: "teach", session: "teach-app", name: "Grace", role: .teacher, host: node, incarnation: 2))
    for index in 1...8 {
        let user = "stu-\(index)"
        apply(user, .student, .joinSession(user: user, session: "\(user)-web", name: "S\(index)", role: .student, host: node, incarnation: 2))
        apply("teach", .teacher, .setStage(user: user, on: true))
        apply(user, .student, .setHand(user: user, raised: true))
    }
    apply("teach", .teacher, .reward(user: "stu-1", amount: 3))
    apply("teach", .teacher, .setRoomProperty(key: "topic", value: [1, 2, 3], cause: "plan"))
    return room
}()

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("wire fuzz finding: \(message())") }
}

func exercise(_ state: RoomState) {
    var empty = RoomState(roomID: state.roomID)
    empty.merge(state)
    empty.merge(state)
    if state.roomID == populatedRoom.roomID {
        var room = populatedRoom
        room.merge(state)
        _ = room.snapshot()
        _ = room.stageWinners
    }
}

func exercise(_ deltas: [Delta], roomID: String) {
    var room = roomID == populatedRoom.roomID ? populatedRoom : RoomState(roomID: roomID)
    for delta in deltas { _ = room.apply(delta) }
    for delta in deltas.reversed() { _ = room.apply(delta) }
    _ = room.missing(since: populatedRoom.seen)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func wireFuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)

    if let envelope = try? WireCodec.decode(bytes, limits: fuzzLimits) {
        check((try? WireCodec.decode(WireCodec.encode(envelope), limits: fuzzLimits)) == envelope, "envelope does not round trip")
        switch envelope.message {
        case let .deltaBatch(batch): exercise(batch.deltas, roomID: envelope.roomID)
        case let .snapshot(state), let .patch(state): exercise(state)
        case let .joinResponse(response): exercise(response.state)
        case let .syncResponse(response):
            if let patch = response.patch { exercise(patch) }
            exercise(response.batches.flatMap(\.deltas), roomID: envelope.roomID)
        default: break
        }
    }
    if let batch = try? WireCodec.decodeBatch(bytes, limits: fuzzLimits) {
        let again = try? WireCodec.decodeBatch(WireCodec.encodeBatch(origin: batch.origin, deltas: batch.deltas), limits: fuzzLimits)
        check(again == batch, "batch does not round trip")
        exercise(batch.deltas, roomID: "math-101")
    }
    if let state = try? WireCodec.decodePatch(bytes, limits: fuzzLimits) {
        check((try? WireCodec.decodePatch(WireCodec.encodePatch(state), limits: fuzzLimits)) == state, "patch does not round trip")
        exercise(state)
    }
    return 0
}
