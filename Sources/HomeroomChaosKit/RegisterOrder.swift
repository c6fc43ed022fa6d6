import HomeroomCore

/// One register the workload writes: a user's field, or the room's (user nil).
struct RegisterKey: Hashable, Comparable, CustomStringConvertible {
    var user: UserID?
    var field: String

    static func < (a: RegisterKey, b: RegisterKey) -> Bool {
        (a.user ?? "", a.field) < (b.user ?? "", b.field)
    }

    var description: String { "\(user ?? "room") \(field)" }
}

extension RegisterMark {
    var key: RegisterKey { RegisterKey(user: user, field: field) }
}

/// A register as a replica holds it, its value spelled as `RegisterMark` spells values.
struct HeldRegister {
    var key: RegisterKey
    var value: String
    var stamp: Stamp
}

extension RoomState {
    static let workloadUserFields = ["name", "stage", "board", "hand", "camera-device", "microphone-device",
                                     "camera-privilege", "microphone-privilege"]
    static let workloadRoomFields = ["stage-limit", "hand-limit"]

    /// One register the workload writes, as this replica holds it (an unwritten one
    /// reads as its default with the origin stamp); nil for a field it never writes.
    func workloadRegister(_ key: RegisterKey) -> HeldRegister? {
        func held<Value>(_ register: Register<Value>) -> HeldRegister {
            HeldRegister(key: key, value: "\(register.value)", stamp: register.stamp)
        }
        guard let user = key.user else {
            switch key.field {
            case "stage-limit": return held(stageLimit)
            case "hand-limit": return held(handLimit)
            default: return nil
            }
        }
        let record = users[user] ?? UserRecord()
        switch key.field {
        case "name": return held(record.name)
        case "stage": return held(record.stage)
        case "board": return held(record.board)
        case "hand": return held(record.hand)
        case "camera-device": return held(record.cameraDevice)
        case "microphone-device": return held(record.microphoneDevice)
        case "camera-privilege": return held(record.cameraPrivilege)
        case "microphone-privilege": return held(record.microphonePrivilege)
        default: return nil
        }
    }

    /// Every register the workload writes, as this replica holds it; a user's activity
    /// registers only when it has any (an untouched user's are defaults, written by nobody).
    func workloadRegisters() -> [HeldRegister] {
        var registers = Self.workloadRoomFields.compactMap { workloadRegister(RegisterKey(user: nil, field: $0)) }
        for (user, record) in users {
            let fields = record.hasActivity ? Self.workloadUserFields : ["name"]
            registers += fields.compactMap { workloadRegister(RegisterKey(user: user, field: $0)) }
        }
        return registers
    }
}

/// The merge order of the acknowledged register writes, built from the history alone:
/// for each register, the acknowledged write with the largest stamp. Every replica must
/// end holding that write or a later one (a register keeps the largest stamp it merged).
///
/// An acknowledgement carries only the dot, so the stamps come from what the observers
/// saw on the nodes during the run (`Observatory.Tracking.stamps`). An acknowledged write
/// no sample caught (overwritten within one sample period everywhere) has no place in the
/// order; it is counted apart, and a replica holding it is still judged by its dot.
struct RegisterOrder {
    struct Write {
        var dot: Dot
        var stamp: Stamp
        var value: String
    }

    /// The acknowledged register writes, by dot.
    private(set) var acknowledged: [Dot: RegisterMark] = [:]
    /// For each register, the acknowledged write the merge order puts last.
    private(set) var last: [RegisterKey: Write] = [:]
    /// Acknowledged register writes with a stamp seen, and without one.
    private(set) var ordered = 0
    private(set) var unstamped = 0
    /// Values of register writes that got no answer: each may or may not have landed.
    private(set) var uncertain: [RegisterKey: Set<String>] = [:]

    init(history: [WriteRecord], stamps: [Dot: Stamp]) {
        for record in history {
            guard let mark = record.register else { continue }
            switch record.outcome {
            case let .acknowledged(dot):
                acknowledged[dot] = mark
                guard let stamp = stamps[dot] else {
                    unstamped += 1
                    continue
                }
                ordered += 1
                if last[mark.key].map({ $0.stamp < stamp }) ?? true {
                    last[mark.key] = Write(dot: dot, stamp: stamp, value: mark.value)
                }
            case .indeterminate: uncertain[mark.key, default: []].insert(mark.value)
            case .refused: break
            }
        }
    }

    /// The write the model says a register ends with, given what a replica holds there:
    /// the last acknowledged write, unless the replica holds a later one the history
    /// accounts for (an acknowledged write of this register no sample caught, or a write
    /// that got no answer, with its value). A later write the history does not account
    /// for is ignored, so the model's value stands against it.
    func expected(_ key: RegisterKey, held: HeldRegister?) -> Write? {
        let model = last[key]
        guard let held, held.stamp.sequence != 0, model.map({ $0.stamp < held.stamp }) ?? true else { return model }
        if let mark = acknowledged[held.stamp.dot], mark.key == key {
            return Write(dot: held.stamp.dot, stamp: held.stamp, value: mark.value)
        }
        if uncertain[key]?.contains(held.value) == true {
            return Write(dot: held.stamp.dot, stamp: held.stamp, value: held.value)
        }
        return model
    }

    /// Each register of `replica` that holds a write older than the acknowledged one the
    /// merge order puts last: that write was lost to an older one (a merge that kept the
    /// wrong stamp), whatever its own dot says. Returns how many registers were compared.
    func olderThanLast(in replica: FinalReplica, into problems: inout [String]) -> Int {
        for (key, write) in last.sorted(by: { $0.key < $1.key }) {
            let held = replica.state.workloadRegister(key)
            let stamp = held?.stamp ?? .origin
            guard stamp < write.stamp else { continue }
            problems.append("\(replica.label): \(key) = \(held?.value ?? "-") by \(stamp.dot) (stamp \(stamp)), older than the acknowledged \(key) = \(write.value) by \(write.dot) (stamp \(write.stamp)) the merge order puts last")
        }
        return last.count
    }
}
