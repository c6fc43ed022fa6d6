/// The protocol version this build speaks (see Proto/homeroom/v1).
public enum WireProtocol {
    /// The version this build sends.
    public static let version: UInt32 = 1
    /// The versions this build accepts.
    public static let supportedVersions: ClosedRange<UInt32> = 1...1
}
