import Foundation
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomHarness

/// `--closed`: the nodes run as docs/SECURITY.md says (a token key and a cluster key),
/// so the room's topics are sealed and the mid-run ban rotates its keys on every node,
/// under the faults; every client joins with a token of its own.
final class ClosedRoom: Sendable {
    static let shared = Mutex<ClosedRoom?>(nil)

    let signing: SigningKeys
    let nodeFlags: [String]
    private let lifetimeSeconds: Int64

    /// Writes the public token key and a cluster key into `directory`.
    init(directory: String, lifetimeSeconds: Int64) throws(SecurityError) {
        signing = SigningKeys.generate()
        self.lifetimeSeconds = lifetimeSeconds
        let publicKey = directory + "/token-signing.pub", clusterKey = directory + "/cluster.key"
        try KeyFiles.write(signing.publicKey, to: publicKey, secret: false)
        try KeyFiles.write(ClusterKey.generate().secretForExport(), to: clusterKey, secret: true)
        nodeFlags = ["--token-key", publicKey, "--cluster-key", clusterKey, "--token-max-lifetime", "\(lifetimeSeconds)"]
    }

    /// `homeroom verify`: the operator's cluster already runs with its keys; the tool signs
    /// its clients' tokens with the secret key it was given.
    init(signing: SigningKeys, lifetimeSeconds: Int64) {
        self.signing = signing
        self.lifetimeSeconds = lifetimeSeconds
        nodeFlags = []
    }

    func token(room: String, user: UserID, role: Role) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return JoinToken.create(TokenClaims(app: "homeroom", room: room, user: user, role: role, issuedAt: now, expiresAt: now + lifetimeSeconds),
                                keys: signing)
    }

    /// The token `user` joins with, when the run is closed.
    static func token(room: String, user: UserID, role: Role) -> String? {
        shared.withLock { $0 }?.token(room: room, user: user, role: role)
    }
}
