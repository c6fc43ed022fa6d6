@preconcurrency import Glibc
import HomeroomNode

/// `homeroom keys generate`: an Ed25519 signing key pair for join tokens and a cluster key.
enum KeysCommand {
    static let usage = """
        OVERVIEW: Generate the keys a secure cluster needs.

        USAGE: homeroom keys generate [--out <dir>]

        Writes into <dir> (default: the current directory):
          token-signing.key   Ed25519 secret key (mode 600): signs join tokens. Keep it off the nodes.
          token-signing.pub   Ed25519 public key: give it to every node (--token-key).
          cluster.key         Shared secret (mode 600): every node of the cluster (--cluster-key).
        Existing files are never overwritten.

        OPTIONS:
          --out <dir>   Where to write the files.
          -h, --help    Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        guard arguments.first == "generate" else {
            if arguments.first == "-h" || arguments.first == "--help" { print(usage); return }
            throw .usage("expected 'homeroom keys generate'", usage: usage)
        }
        var reader = ArgumentReader(arguments.dropFirst(), usage: usage)
        if reader.wantsHelp { print(usage); return }
        let directory = try reader.string("--out") ?? "."
        try reader.finish()
        // A directory that does not exist yet is made, private, as a node's data directory is.
        if access(directory, F_OK) != 0 && mkdir(directory, 0o700) != 0 {
            throw .failure("cannot create \(directory): \(String(cString: strerror(errno))); create it or choose another --out directory")
        }
        let paths = ["token-signing.key", "token-signing.pub", "cluster.key"].map { directory + "/" + $0 }
        for path in paths where access(path, F_OK) == 0 {
            throw .failure("\(path) exists already; remove it or choose another --out directory")
        }
        let signing = SigningKeys.generate()
        let cluster = ClusterKey.generate()
        do {
            try KeyFiles.write(signing.secretKeyForExport(), to: paths[0], secret: true)
            try KeyFiles.write(signing.publicKey, to: paths[1], secret: false)
            try KeyFiles.write(cluster.secretForExport(), to: paths[2], secret: true)
        } catch {
            throw .failure(error.description)
        }
        print("wrote \(paths.joined(separator: ", "))")
    }
}
