import HomeroomContext

/// The stage carousel from the page (StreamContext): start with its settings, stop.
extension PageAction {
    func performCarousel(on streams: StreamContext) throws(ContextError) {
        guard self.do == "carousel-start" else {
            try streams.stopCarousel()
            return
        }
        let settings = try carouselSettings()
        // The node checks the interval's bounds (10-99 s) and refuses with its code.
        if let seconds = settings.seconds {
            try streams.startCarousel(intervalSeconds: seconds, range: settings.cameraOnly ? .cameraOn : .all,
                                      order: settings.random ? .random : .joinOrder)
        } else {
            try streams.startCarousel(range: settings.cameraOnly ? .cameraOn : .all, order: settings.random ? .random : .joinOrder)
        }
    }

    /// The carousel's settings as the page names them (the CLI's words: all|camera-on, join-order|random).
    /// No interval: the context's default.
    func carouselSettings() throws(ContextError) -> (seconds: UInt32?, cameraOnly: Bool, random: Bool) {
        var interval: UInt32?
        if let seconds {
            guard let exact = UInt32(exactly: seconds) else { throw .invalidArgument("a carousel turns every 10 to 99 s, not \(seconds)") }
            interval = exact
        }
        let cameraOnly: Bool
        switch range ?? "all" {
        case "all": cameraOnly = false
        case "camera-on": cameraOnly = true
        default: throw .invalidArgument("the carousel's range is all or camera-on, not '\(range ?? "")'")
        }
        let random: Bool
        switch order ?? "join-order" {
        case "join-order": random = false
        case "random": random = true
        default: throw .invalidArgument("the carousel's order is join-order or random, not '\(order ?? "")'")
        }
        return (interval, cameraOnly, random)
    }
}
