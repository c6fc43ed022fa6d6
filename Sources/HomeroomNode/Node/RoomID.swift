/// Room ids travel as PUB/SUB topic prefixes, so they are restricted to a safe
/// alphabet: 1 to 128 of A-Z a-z 0-9 . _ - :
public enum RoomID {
    public static func validate(_ id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= 128 else { return "a room id is 1 to 128 characters, got \(id.utf8.count)" }
        for byte in id.utf8 {
            let ok = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D || byte == 0x3A
            if !ok { return "room id '\(id)' may use only letters, digits, '.', '_', '-' and ':'" }
        }
        return nil
    }
}
