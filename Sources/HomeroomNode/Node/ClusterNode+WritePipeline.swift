import HomeroomCore
import HomeroomEngine

extension ClusterNode {
    /// The one write pipeline, for client and system writes alike: the engine's numbered
    /// write is stored (committed) before it is applied, published or acknowledged, and its
    /// number is consumed only once the store has it.
    ///
    /// Called holding the room's write gate and not the state lock: the store takes the
    /// write while other rooms' writes, remote deltas, heartbeats and reads go on (appends
    /// that meet are committed together). Then, under the state lock, the engine commits
    /// it and it is queued for publishing. The gate keeps this room's next write from
    /// being numbered before this one is committed. The caller logs a failure.
    func carryOut(_ stamped: StampedWrite, store: NodeStore?) -> Result<CommittedWrite, StoreError> {
        if let store {
            let clock = ContinuousClock()
            let started = clock.now
            do throws(StoreError) {
                try store.append(room: stamped.room, deltas: [stamped.delta])
            } catch {
                state.withLock { $0.engine.storeFailed(stamped) }
                return .failure(error)
            }
            let elapsed = clock.now - started
            metrics.add("store_append_micros_sum", UInt64(elapsed.components.attoseconds / 1_000_000_000_000) + UInt64(elapsed.components.seconds) * 1_000_000)
            metrics.add("store_append_count")
            afterStoreHook.withLock { $0 }?(stamped.room)
        }
        return .success(state.withLock { state -> CommittedWrite in
            if store != nil { state.engine.compactions.appended(room: stamped.room) }
            let committed = state.engine.commit(stamped)
            // Queued under the lock, and the room's writes one at a time (its gate): a
            // room's deltas leave in sequence order.
            outbox.enqueue(room: committed.room, deltas: [committed.delta], toNodes: true)
            return committed
        })
    }

    /// A write the node makes itself (as system) in a room it holds: numbered, stored,
    /// applied, published. False when the node is stopping, lacks the room, or the store failed.
    @discardableResult
    func sequenceSystemWrite(room: String, _ write: Write, evenWhileStopping: Bool = false) -> Bool {
        let result = writeGates.withGate(room) { () -> Result<CommittedWrite, StoreError>? in
            let decided = state.withLock { state -> (StampedWrite, NodeStore?)? in
                guard evenWhileStopping || !state.stopping,
                      let stamped = state.engine.stampSystemWrite(room: room, write, nowMillis: wallMillis()) else { return nil }
                state.engine.storing(stamped)
                return (stamped, state.store)
            }
            guard let (stamped, store) = decided else { return nil }
            return carryOut(stamped, store: store)
        }
        switch result {
        case .success: return true
        case let .failure(error):
            logger.warning("store failed for a system write; it was not made", ["room": room, "error": "\(error)"])
            return false
        case nil: return false
        }
    }

    /// A write the node makes for the cluster, as this node.
    func systemWrite(room: String, _ operation: Operation) {
        sequenceSystemWrite(room: room, Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: operation))
    }
}
