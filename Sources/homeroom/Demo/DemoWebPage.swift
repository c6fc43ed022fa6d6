import HomeroomContext
import HomeroomNode
import HomeroomSupport
import HomeroomTerminalUI
import HomeroomWeb

/// `homeroom demo --web`: the lesson served to a browser as `homeroom web` serves any
/// room. The demo's nodes take no tokens, so the link's token is signed with a key made
/// for this run only: it names an observer, and serves to say who the page is.
struct DemoWebPage {
    let server: WebServer
    let link: String

    init(room: String, nodes: [String], theme: Theme, logger: Logger) throws(CommandLineError) {
        do {
            server = try WebServer(WebServer.Options(listen: "127.0.0.1:0", nodes: nodes, themeJSON: theme.json()), logger: logger)
        } catch {
            throw .failure("cannot serve the demo's page: \(error.description)")
        }
        let now = Int64(WallClock.nowMillis() / 1000)
        let claims = TokenClaims(app: "homeroom", room: room, user: "visitor", role: .observer, issuedAt: now, expiresAt: now + 3_600)
        let token = JoinToken.create(claims, keys: SigningKeys.generate())
        link = "http://127.0.0.1:\(server.port)/#token=\(token)"
    }
}
