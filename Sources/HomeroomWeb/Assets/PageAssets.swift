/// A file the server serves: its type and bytes.
struct PageAsset: Sendable {
    var contentType: String
    var body: [UInt8]

    init(_ contentType: String, _ text: String) {
        self.contentType = contentType
        self.body = Array(text.utf8)
    }
}

/// Every file of the page, by path: plain ES modules and a stylesheet, no build step.
/// Each lives in a Swift file of its own (`<Name>Asset.swift`) so the binary carries the page.
enum PageAssets {
    static func all(themeJSON: String) -> [String: PageAsset] {
        let script = "text/javascript; charset=utf-8"
        return [
            "/": PageAsset("text/html; charset=utf-8", indexHTML),
            "/index.html": PageAsset("text/html; charset=utf-8", indexHTML),
            "/style.css": PageAsset("text/css; charset=utf-8", styleCSS),
            "/theme.json": PageAsset("application/json", themeJSON),
            "/js/app.js": PageAsset(script, appJS),
            "/js/dom.js": PageAsset(script, domJS),
            "/js/socket.js": PageAsset(script, socketJS),
            "/js/theme.js": PageAsset(script, themeJS),
            "/js/scene.js": PageAsset(script, sceneJS),
            "/js/statebar.js": PageAsset(script, stateBarJS),
            "/js/roster.js": PageAsset(script, rosterJS),
            "/js/stage.js": PageAsset(script, stageJS),
            "/js/hands.js": PageAsset(script, handsJS),
            "/js/invitations.js": PageAsset(script, invitationsJS),
            "/js/chat.js": PageAsset(script, chatJS),
            "/js/controls.js": PageAsset(script, controlsJS),
            "/js/clock.js": PageAsset(script, clockJS),
            "/js/carousel.js": PageAsset(script, carouselJS),
            "/js/groups.js": PageAsset(script, groupsJS),
            "/js/whispers.js": PageAsset(script, whispersJS),
            "/js/lost.js": PageAsset(script, linkLostJS),
        ]
    }
}
