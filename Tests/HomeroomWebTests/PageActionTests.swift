import FoundationEssentials
import HomeroomContext
import HomeroomSupport
import Testing
@testable import HomeroomWeb

/// The page's actions as the session decodes them, and the codes the page is shown when
/// one cannot be carried out. No node: the pool here never joins, so every write that
/// gets past the action's own checks is refused [not-joined].
@Suite struct PageActionTests {
    static func action(_ json: String) throws -> PageAction {
        try JSONDecoder().decode(PageAction.self, from: Data(json.utf8))
    }

    static func code(_ json: String, role: Role = .teacher) throws -> String? {
        let pool = try ContextPool(config: ClassroomConfig(room: "maths", user: "ada", role: role, nodes: ["tcp://127.0.0.1:1"]),
                                   logger: Logger(label: "page-action-test", level: .error))
        defer { pool.close() }
        let decoded = try action(json)
        do throws(ContextError) {
            try decoded.perform(on: pool)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aMoveGoesToAGroupOrBackToTheMainRoom() throws {
        #expect(try Self.action(#"{"type":"action","id":1,"do":"group-move","user":"ann","group":"g1"}"#).moveDestination() == "g1")
        #expect(try Self.action(#"{"type":"action","id":2,"do":"group-move","user":"ann","group":"main"}"#).moveDestination() == nil)
        #expect(try Self.action(#"{"type":"action","id":3,"do":"group-move","user":"ann"}"#).moveDestination() == nil)
    }

    @Test func theCarouselsSettingsAreTheCLIsWords() throws {
        let chosen = try Self.action(#"{"id":1,"do":"carousel-start","seconds":30,"range":"camera-on","order":"random"}"#).carouselSettings()
        #expect(chosen.seconds == 30 && chosen.cameraOnly && chosen.random)
        let defaults = try Self.action(#"{"id":2,"do":"carousel-start"}"#).carouselSettings()
        #expect(defaults.seconds == nil && !defaults.cameraOnly && !defaults.random)
        for bad in [#"{"id":3,"do":"carousel-start","range":"sideways"}"#, #"{"id":4,"do":"carousel-start","order":"alphabetical"}"#,
                    #"{"id":5,"do":"carousel-start","seconds":-1}"#] {
            #expect(throws: ContextError.self, "\(bad)") { try Self.action(bad).carouselSettings() }
        }
    }

    @Test func anActionRefusedBeforeItIsSentSaysWhy() throws {
        // The action's own checks and the contexts' come first: invalid-argument.
        #expect(try Self.code(#"{"id":1,"do":"whisper","user":"ann"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":2,"do":"whisper","text":"hi"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":3,"do":"group-create","group":"Not An Id"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":4,"do":"group-create"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":5,"do":"group-random","count":21}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":6,"do":"group-teleport"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":7,"do":"carousel-start","range":"sideways"}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":17,"do":"invite","seconds":30}"#) == ContextError.invalidArgument)
        #expect(try Self.code(#"{"id":18,"do":"invite","user":"ann","seconds":-5}"#) == ContextError.invalidArgument)
        // Well formed: it reaches the contexts, which need a joined pool.
        for json in [#"{"id":8,"do":"whisper","user":"ann","text":"see me after class"}"#,
                     #"{"id":9,"do":"board","user":"ann","on":true}"#,
                     #"{"id":10,"do":"group-create","group":"g1","name":"Fractions"}"#,
                     #"{"id":11,"do":"group-move","user":"ann","group":"g1"}"#,
                     #"{"id":12,"do":"group-end"}"#,
                     #"{"id":13,"do":"carousel-start","seconds":30}"#,
                     #"{"id":14,"do":"carousel-stop"}"#,
                     #"{"id":19,"do":"invite","user":"ann","seconds":30}"#, #"{"id":20,"do":"invite","user":"ann"}"#,
                     #"{"id":21,"do":"invitation-accept"}"#, #"{"id":22,"do":"invitation-decline"}"#] {
            #expect(try Self.code(json) == ContextError.notJoined, "\(json)")
        }
        // A student's group action is refused before any group room is visited.
        for json in [#"{"id":15,"do":"group-broadcast","text":"hello groups"}"#, #"{"id":16,"do":"group-create","group":"g1"}"#] {
            #expect(try Self.code(json, role: .student) == ContextError.notAllowed, "\(json)")
        }
    }

    @Test func theWelcomeCarriesTheServersClock() {
        let text = PageReply.json(PageReply.Welcome(user: "ada", role: "teacher", room: "maths", nowMillis: 1_767_000_000_000))
        #expect(text == #"{"nowMillis":1767000000000,"role":"teacher","room":"maths","type":"welcome","user":"ada"}"#)
    }
}
