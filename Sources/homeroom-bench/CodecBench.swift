import HomeroomCore
import HomeroomWire

/// Codec suite: protobuf-c encode and decode of delta batches, per delta.
enum CodecBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let batchSize = 1_000
        let batches = quick ? 50 : 400
        var rng = SplitMix64(seed: 7)
        var sequencer = Sequencer(replica: ReplicaID(3))
        var now: UInt64 = 1_700_000_000_000
        var all: [[Delta]] = []
        for _ in 0..<batches {
            var batch: [Delta] = []
            for index in 0..<batchSize {
                now += UInt64.random(in: 0...1, using: &rng)
                let user = "student-\(Int.random(in: 0..<10_000, using: &rng))"
                let device = Bool.random(using: &rng) ? Device.camera : Device.microphone
                let on = Bool.random(using: &rng)
                let write: Write
                switch index % 3 {
                case 0: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .setStage(user: user, on: on))
                case 1: write = Write(author: user, authorRole: .student, authorCounter: UInt64(index), operation: .setDevice(user: user, device: device, on: on))
                default: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .setPrivilege(user: user, device: device, allowed: on))
                }
                batch.append(sequencer.stamp(write, nowMillis: now))
            }
            all.append(batch)
        }
        var encoded: [[UInt8]] = []
        var bestEncode = Double.infinity
        for _ in 0..<3 {
            var out: [[UInt8]] = []
            out.reserveCapacity(batches)
            let seconds = measure { out = encodeBatches(all) }
            bestEncode = min(bestEncode, seconds)
            encoded = out
        }
        let totalDeltas = batches * batchSize
        let bytes = encoded.reduce(0) { $0 + $1.count }
        var bestDecode = Double.infinity
        for _ in 0..<3 {
            var decoded = 0
            let seconds = measure { decoded = decodeBatches(encoded) }
            precondition(decoded == totalDeltas, "decode lost deltas")
            bestDecode = min(bestDecode, seconds)
        }
        let bytesPerDelta = Double(bytes) / Double(totalDeltas)
        emit(BenchRow(suite: "codec", name: "encode-batch-1000-stage-device-privilege-10k-users", n: totalDeltas,
                      opsPerSecond: Double(totalDeltas) / bestEncode, bytesPerOp: bytesPerDelta, seconds: bestEncode,
                      target: ">= 2000000 deltas/s, <= 32 bytes/delta"))
        emit(BenchRow(suite: "codec", name: "decode-batch-1000-stage-device-privilege-10k-users", n: totalDeltas,
                      opsPerSecond: Double(totalDeltas) / bestDecode, bytesPerOp: bytesPerDelta, seconds: bestDecode,
                      target: ">= 2000000 deltas/s"))
    }

    // Own functions, for callgrind's --toggle-collect (docs/PERFORMANCE.md).
    @inline(never)
    static func encodeBatches(_ batches: [[Delta]]) -> [[UInt8]] {
        batches.map { WireCodec.encodeBatch(origin: ReplicaID(3), deltas: $0) }
    }

    @inline(never)
    static func decodeBatches(_ encoded: [[UInt8]]) -> Int {
        var decoded = 0
        for bytes in encoded {
            if let batch = try? WireCodec.decodeBatch(bytes, limits: .default) { decoded += batch.deltas.count }
        }
        return decoded
    }
}
