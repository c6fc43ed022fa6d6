/// The stage carousel (docs/PROTOCOL.md, "Deriving the carousel"): a pure function of
/// the room and a moment, so every replica that holds the same room and reads the same
/// time puts the same students on stage, with no node in charge.
extension RoomState {
    /// The running carousel's turn at `nowMillis` (Unix ms), or nil when none runs (or
    /// the room is one-to-one, whose stage is fixed).
    public func carouselTurn(atMillis nowMillis: UInt64) -> CarouselTurn? {
        let settings = carousel.value
        guard settings.running, type.value != .oneToOne else { return nil }
        let interval = UInt64(max(settings.intervalSeconds, Carousel.intervalRange.lowerBound)) * 1_000
        let start = carousel.stamp.clock.millis
        let number = nowMillis > start ? (nowMillis - start) / interval : 0
        let candidates = carouselCandidates(settings.range)
        let manual = stageWinners.filter { users[$0]?.role.value != .student }
        let seats = max(0, stageLimitValue - manual.count)
        let onStage: [UserID]
        if candidates.count <= seats {
            onStage = candidates
        } else if settings.order == .joinOrder {
            let offset = Int((number &* UInt64(seats)) % UInt64(candidates.count))
            onStage = (0..<seats).map { candidates[(offset + $0) % candidates.count] }
        } else {
            onStage = Array(Self.carouselShuffle(candidates, seed: start ^ (number &* 0x9E37_79B9_7F4A_7C15)).prefix(seats))
        }
        return CarouselTurn(number: number, onStage: onStage, candidates: candidates,
                            nextTurnAtMillis: start + (number + 1) * interval, rotates: candidates.count > seats)
    }

    /// Who is on stage at `nowMillis`: while a carousel runs, the teachers and assistants
    /// the stage holds and the students of the current turn; otherwise `stageWinners`.
    public func stage(atMillis nowMillis: UInt64) -> [UserID] { stage(during: carouselTurn(atMillis: nowMillis)) }

    /// The stage during a turn already derived (nil: no carousel runs): deriving a turn
    /// walks every user, so a reader that has one passes it in.
    public func stage(during turn: CarouselTurn?) -> [UserID] {
        guard let turn else { return stageWinners }
        return stageWinners.filter { users[$0]?.role.value != .student } + turn.onStage
    }

    /// Students taking turns: online, not banned, with the camera on for `.cameraOn` (as
    /// the room counts it: a camera the room's mute covers is off), in join order (the
    /// earliest start among each one's live sessions, then the id).
    func carouselCandidates(_ range: Carousel.Range) -> [UserID] {
        var ordered: [(Stamp, UserID)] = []
        let streams = streamRules
        for (user, record) in users where record.isKnown && record.role.value == .student {
            if range == .cameraOn && !streams.deviceOn(record, .camera) { continue }
            let starts = record.sessions.filter { record.isLive($0, deadIncarnations: deadIncarnations) }.map(\.started)
            guard let first = starts.min() else { continue }
            ordered.append((first, user))
        }
        return ordered.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }.map(\.1)
    }

    /// A Fisher-Yates shuffle driven by SplitMix64 (`seed`): for i from the last index
    /// down to 1, swap i with `next() % (i + 1)`. Written out so that any client, in any
    /// language, shuffles the same way (the standard library's shuffle may change).
    public static func carouselShuffle(_ users: [UserID], seed: UInt64) -> [UserID] {
        var shuffled = users
        var generator = SplitMix64(seed: seed)
        var index = shuffled.count - 1
        while index > 0 {
            let other = Int(generator.next() % UInt64(index + 1))
            shuffled.swapAt(index, other)
            index -= 1
        }
        return shuffled
    }
}
