import HomeroomNode
import Testing
@testable import HomeroomContext

@Suite struct ContextErrorTests {
    @Test func keepsTheNodesRefusalCode() {
        let error = ContextError(ClientError.refused(code: "stage-full", message: "the stage is full"))
        #expect(error.code == ContextError.stageFull)
        #expect(error.description.contains("the stage is full"))
    }
}
