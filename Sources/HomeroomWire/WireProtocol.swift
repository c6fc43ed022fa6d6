/// The protocol version this build speaks (see Proto/homeroom/v1).
public enum WireProtocol {
    public static let version: UInt32 = 1
}
