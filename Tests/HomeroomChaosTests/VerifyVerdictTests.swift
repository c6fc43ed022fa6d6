import Testing
@testable import HomeroomChaosKit

/// `homeroom verify`'s one-line verdict: it passes only on a passing result, names lost
/// acknowledged writes first when there are any, then the other failed checks, and
/// leaves out targets (which fail nothing).
@Suite struct VerifyVerdictTests {
    static func result(lost: Int, failing: [String] = [], targets: [String] = []) -> Checker.Result {
        var checks = [Check(name: "no-lost-writes", passed: lost == 0, detail: "")]
        checks += failing.map { Check(name: $0, passed: false, detail: "") }
        checks += targets.map { Check(name: $0, passed: false, isTarget: true, detail: "") }
        var result = Checker.Result(checks: checks)
        result.acknowledged = 500
        result.lostCount = lost
        return result
    }

    @Test func aPassingRunSaysLostZero() {
        let result = Self.result(lost: 0, targets: ["target-convergence"])
        let verdict = VerifyVerdict(result: result, passed: result.passed)
        #expect(verdict.passed)
        #expect(verdict.line == "PASS: 500 acknowledged writes, lost 0, every replica agrees")
    }

    @Test func lostWritesComeFirstThenTheOtherFailures() {
        let result = Self.result(lost: 34, failing: ["messages", "floor"], targets: ["target-convergence"])
        let verdict = VerifyVerdict(result: result, passed: result.passed)
        #expect(!verdict.passed)
        #expect(verdict.line == "FAIL: 34 of 500 acknowledged writes lost; checks failed: messages, floor")
    }

    @Test func aFailureWithoutLossNamesItsChecks() {
        let result = Self.result(lost: 0, failing: ["join-storm"])
        let verdict = VerifyVerdict(result: result, passed: result.passed)
        #expect(verdict.line == "FAIL: checks failed: join-storm")
    }
}
