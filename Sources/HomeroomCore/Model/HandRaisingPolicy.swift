/// Hand raising as a room has it (Flexible Classroom's `allowHandsUp(state, autoStage)`).
public struct HandRaisingPolicy: Hashable, Sendable, CustomStringConvertible {
    /// Students may raise their hands (a raise is refused `hand-raising-off` otherwise).
    public var allowed: Bool
    /// A student's raise puts it on stage while seats remain (only while `allowed`).
    public var autoStage: Bool

    public init(allowed: Bool = true, autoStage: Bool = false) {
        self.allowed = allowed
        self.autoStage = allowed && autoStage
    }

    public var description: String { allowed ? (autoStage ? "on, auto-stage" : "on") : "off" }
}
