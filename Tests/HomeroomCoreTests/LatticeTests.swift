import Testing
@testable import HomeroomCore

@Suite struct ClockTests {
    @Test func tickIsStrictlyIncreasingEvenWhenWallTimeStands() {
        var clock = HybridClock(replica: ReplicaID(1))
        let a = clock.tick(nowMillis: 100)
        let b = clock.tick(nowMillis: 100)
        let c = clock.tick(nowMillis: 99)
        #expect(a < b && b < c)
        #expect(b.millis == 100 && b.logical == 1)
    }

    @Test func logicalOverflowCarriesIntoMillis() {
        var clock = HybridClock(replica: ReplicaID(1))
        var last = clock.tick(nowMillis: 5)
        for _ in 0..<70_000 {
            let next = clock.tick(nowMillis: 5)
            #expect(last < next)
            last = next
        }
        #expect(last.millis == 6)
    }

    @Test func remoteClockFarAheadIsRejectedAndDoesNotMoveTheClock() {
        var clock = HybridClock(replica: ReplicaID(1), maxForwardDriftMillis: 60_000)
        let far = HybridTimestamp(millis: 1_000 + 60_001, logical: 0, replica: ReplicaID(2))
        #expect(throws: ClockError.self) { try clock.observe(far, nowMillis: 1_000) }
        #expect(clock.tick(nowMillis: 1_000).millis == 1_000)
        let near = HybridTimestamp(millis: 1_000 + 59_000, logical: 3, replica: ReplicaID(2))
        #expect(throws: Never.self) { try clock.observe(near, nowMillis: 1_000) }
        #expect(clock.tick(nowMillis: 1_000) > near)
    }

    @Test func tiesBreakByReplica() {
        let a = HybridTimestamp(millis: 7, logical: 0, replica: ReplicaID(1))
        let b = HybridTimestamp(millis: 7, logical: 0, replica: ReplicaID(2))
        #expect(a < b)
    }
}

@Suite struct VersionVectorTests {
    @Test func earlyDotsFoldWhenTheGapFills() {
        var vector = VersionVector()
        let origin = ReplicaID(9)
        let inserted = [1, 3, 5, 3].map { vector.insert(Dot(origin: origin, sequence: UInt64($0))) }
        #expect(inserted == [true, true, true, false])
        #expect(vector.origins[origin]!.gaps == [2...2, 4...4])
        vector.insert(Dot(origin: origin, sequence: 2))
        vector.insert(Dot(origin: origin, sequence: 4))
        #expect(vector.origins[origin] == OriginProgress(contiguous: 5))
    }

    @Test func unionAndDominance() {
        var a = VersionVector(contiguous: [ReplicaID(1): 4])
        a.insert(Dot(origin: ReplicaID(1), sequence: 6))
        let b = VersionVector(contiguous: [ReplicaID(1): 5, ReplicaID(2): 1])
        #expect(!a.dominates(b) && !b.dominates(a))
        var c = a
        c.formUnion(b)
        #expect(c.origins[ReplicaID(1)] == OriginProgress(contiguous: 6))
        #expect(c.dominates(a) && c.dominates(b))
    }
}

@Suite struct RegisterTests {
    @Test func lastWriterWinsRegardlessOfOrder() {
        let early = Stamp(clock: HybridTimestamp(millis: 1, logical: 0, replica: ReplicaID(1)), sequence: 1)
        let late = Stamp(clock: HybridTimestamp(millis: 2, logical: 0, replica: ReplicaID(2)), sequence: 1)
        var x = Register(false, stamp: .origin)
        var y = x
        x.write(true, at: early); x.write(false, at: late)
        y.write(false, at: late); y.write(true, at: early)
        #expect(x == y && x.value == false)
    }

    @Test func writesInTheSameMillisecondBreakTheTieByLogicalThenReplica() {
        let first = Stamp(clock: HybridTimestamp(millis: 5, logical: 0, replica: ReplicaID(2)), sequence: 1)
        let second = Stamp(clock: HybridTimestamp(millis: 5, logical: 1, replica: ReplicaID(1)), sequence: 1)
        let third = Stamp(clock: HybridTimestamp(millis: 5, logical: 1, replica: ReplicaID(2)), sequence: 2)
        let writes = [("a", first), ("b", second), ("c", third)]
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            var register = Register("", stamp: .origin)
            for index in order { register.write(writes[index].0, at: writes[index].1) }
            #expect(register.value == "c" && register.stamp == third)
        }
    }

    @Test func classStateOnlyMovesForwardAndKeepsTheEarliestStart() {
        let s1 = Stamp(clock: HybridTimestamp(millis: 10, logical: 0, replica: ReplicaID(1)), sequence: 1)
        let s2 = Stamp(clock: HybridTimestamp(millis: 20, logical: 0, replica: ReplicaID(2)), sequence: 1)
        var a = ClassStateRegister()
        a.merge(ClassStateRegister(state: .after, stamp: s1))
        a.merge(ClassStateRegister(state: .during, stamp: s2))
        #expect(a.state == .after)
        var b = ClassStateRegister()
        b.merge(ClassStateRegister(state: .during, stamp: s2))
        b.merge(ClassStateRegister(state: .during, stamp: s1))
        #expect(b.stamp == s1)
    }
}
