@preconcurrency import Glibc

// MARK: - Files

public func readFile(_ path: String) -> String? {
    guard let handle = fopen(path, "r") else { return nil }
    defer { fclose(handle) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, handle)
        if count <= 0 { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

@discardableResult
public func writeFile(_ path: String, _ text: String) -> Bool {
    guard let handle = fopen(path, "w") else { return false }
    defer { fclose(handle) }
    let bytes = Array(text.utf8)
    return fwrite(bytes, 1, bytes.count, handle) == bytes.count
}

public func makeDirectories(_ path: String) -> Bool {
    var current = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/") {
        current += "/\(part)"
        if mkdir(current, 0o755) != 0 && errno != EEXIST { return false }
    }
    return true
}

public func removeTree(_ path: String) {
    guard !path.isEmpty, path != "/" else { return }
    _ = try? Spawn.run(["rm", "-rf", "--", path], timeoutMillis: 30_000)
}

public func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return path }
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    let cwd = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return cwd + "/" + path
}

extension String {
    public var trimmingSpaces: String {
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }
}
