import HomeroomNode

/// TLS for the client commands: the authority that signed the node's certificate
/// (`--tls-ca` or HOMEROOM_TLS_CA), needed as soon as a node address is tls+tcp://.
enum ClientTLS {
    static func configure(authority: String?, nodes: [String], usage: String) throws(CommandLineError) {
        let secure = nodes.contains { $0.hasPrefix("tls+tcp://") }
        guard let authority else {
            if secure {
                throw .usage("a tls+tcp:// node needs --tls-ca (or HOMEROOM_TLS_CA): the certificate of the authority that signed the node's certificate", usage: usage)
            }
            return
        }
        do {
            try TransportTLS.configure(TLSSettings(authorityFile: authority))
        } catch {
            throw .failure(error.description)
        }
    }
}
