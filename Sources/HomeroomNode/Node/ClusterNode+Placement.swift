import HomeroomCore
import HomeroomEngine
import HomeroomWire

/// Placement in the shell (docs/PROTOCOL.md, "Placement"): which rooms this node serves,
/// the `not-owner` answer that sends clients to the owners, and the handoff of copies
/// this node no longer owns. With `replicas` 0 every node owns every room and none of
/// this does anything.
extension NodeState {
    /// Placement over this node and every peer it knows by name and address and has not
    /// forgotten (an older store of a name counts once, with the name).
    func placement(ownName: String) -> Placement {
        Placement(replicas: replicas, members: [ownName] + peers.entries.values
            .filter { !$0.liveness.isExpectedOnly && !$0.address.isEmpty && !$0.name.isEmpty }.map(\.name))
    }

    /// Whether this node is one of the room's owners.
    func owns(_ room: String, ownName: String) -> Bool {
        replicas == 0 || placement(ownName: ownName).owns(ownName, room: room)
    }

    /// The peer entry that stands for a node name: alive if any, else the one heard last.
    func entry(named name: String) -> PeerTable.Entry? {
        peers.entries.values.filter { $0.name == name && !$0.address.isEmpty }
            .max { ($0.status == .alive ? 1 : 0, $0.lastHeardMillis, $0.node) < ($1.status == .alive ? 1 : 0, $1.lastHeardMillis, $1.node) }
    }

    /// The room's owners other than this node, as a `not-owner` reply names them.
    func ownerPeers(of room: String, ownName: String) -> [WireMessage.Peer] {
        let wire = Dictionary(peers.wirePeers.map { ($0.node, $0) }, uniquingKeysWith: { first, _ in first })
        return placement(ownName: ownName).owners(of: room).compactMap { entry(named: $0).flatMap { wire[$0.node] } }
    }
}

extension ClusterNode {
    /// The `not-owner` answer to a client's request about a room this node does not own
    /// (nil when it owns it): the owners' addresses, best first, for the client to ask.
    func notOwnerReply(room: String) -> WireMessage.ErrorReply? {
        let owners = state.withLock { state -> [WireMessage.Peer]? in
            state.owns(room, ownName: name) ? nil : state.ownerPeers(of: room, ownName: name)
        }
        guard let owners else { return nil }
        let names = owners.map { $0.nodeName.isEmpty ? $0.address : "\($0.nodeName) (\($0.address))" }
        return WireMessage.ErrorReply(code: "not-owner", message:
            "room \(room) is kept on \(names.joined(separator: ", ")), not on this node: ask one of them", owners: owners)
    }

    /// Once a second: when the members changed, compares every peer's view again for the
    /// rooms this node now owns (a new owner pulls them) and notes the rooms it holds and
    /// no longer owns; each such copy goes once every owner alive holds all of it, and no
    /// session hosted here is still leased in it.
    func handOffRooms() {
        guard config.replicas > 0 else { return }
        let due = state.withLock { state -> [String] in
            let placement = state.placement(ownName: name)
            if placement.members != state.placedMembers {
                state.placedMembers = placement.members
                rescanPlacement(placement, in: &state)
            }
            return state.handingOff.filter { room in
                state.leases[room] == nil && coveredByOwners(room, placement, in: state)
            }.sorted()
        }
        for room in due { handOff(room: room) }
    }

    /// After a change of members: rooms to pull (owned now, and a peer's view shows more)
    /// and rooms to hand off (held, no longer owned).
    private func rescanPlacement(_ placement: Placement, in state: inout NodeState) {
        state.handingOff = Set(state.rooms.keys.filter { !placement.owns(name, room: $0) })
        for (peer, entry) in state.peers.entries where entry.status != .dead {
            for (room, theirs) in entry.rooms where placement.owns(name, room: room)
                && !(state.rooms[room]?.seen ?? VersionVector()).dominates(theirs) {
                let key = NodeState.SyncKey(peer: peer, room: room)
                state.pendingSyncs.insert(key)
                state.openGaps.insert(key)
            }
        }
        // Gaps in rooms this node no longer owns are not its to close.
        for key in state.openGaps where key.room != NodeState.SyncKey.completeList && !placement.owns(name, room: key.room) {
            state.openGaps.remove(key)
            state.pendingSyncs.remove(key)
        }
    }

    private func coveredByOwners(_ room: String, _ placement: Placement, in state: NodeState) -> Bool {
        let views = placement.owners(of: room).filter { $0 != name }.map { owner -> VersionVector? in
            guard let entry = state.entry(named: owner), entry.status == .alive, !entry.viewMismatched else { return nil }
            return entry.rooms[room]
        }
        return state.engine.coveredByOwners(room: room, views: views)
    }

    /// Drops one copy this node no longer owns, with its store rows, keeping its sequence
    /// floor. Under the compaction lock (taken before the state lock, as compactions do),
    /// so no snapshot in flight stores the room again after its rows are gone.
    private func handOff(room: String) {
        let outcome = compacting.withLock { _ in
            state.withLock { state -> Result<Void, StoreError>? in
                let placement = state.placement(ownName: name)
                guard !placement.owns(name, room: room), state.leases[room] == nil,
                      coveredByOwners(room, placement, in: state), let floor = state.engine.handOff(room: room) else { return nil }
                state.handingOff.remove(room)
                state.dirtyRooms[room] = nil
                state.lastTrim[room] = nil
                state.retirementRooms.remove(room)
                state.historyRooms.remove(room)
                for key in state.openGaps where key.room == room { state.openGaps.remove(key) }
                for key in state.pendingSyncs where key.room == room { state.pendingSyncs.remove(key) }
                guard let store = state.store else { return .success(()) }
                do throws(StoreError) {
                    try store.handOff(room: room, floor: floor)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        }
        switch outcome {
        case .success:
            metrics.add("rooms_handed_off_total")
            logger.info("room handed off: every owner holds it", ["room": room])
        case let .failure(error):
            // The room left memory; its rows stay until the next handoff of it (a restart
            // loads it again, and it goes again once covered).
            logger.warning("a handed-off room's rows could not be removed", ["room": room, "error": "\(error)"])
        case nil:
            break
        }
    }
}
