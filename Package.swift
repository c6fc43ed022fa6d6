// swift-tools-version:6.0
// Homeroom: a distributed classroom state-sync engine.
// Layers run one way: Wire -> Node -> Engine and Core (pure) -> Context -> UI.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Homeroom",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "homeroom", targets: ["homeroom"]),
        .executable(name: "homeroom-bench", targets: ["homeroom-bench"]),
        .executable(name: "homeroom-chaos", targets: ["homeroom-chaos"]),
        .library(name: "HomeroomCore", targets: ["HomeroomCore"]),
        .library(name: "HomeroomEngine", targets: ["HomeroomEngine"]),
        .library(name: "HomeroomWire", targets: ["HomeroomWire"]),
        .library(name: "HomeroomNode", targets: ["HomeroomNode"]),
        .library(name: "HomeroomContext", targets: ["HomeroomContext"]),
        .library(name: "HomeroomSupport", targets: ["HomeroomSupport"]),
        .library(name: "HomeroomTerminalUI", targets: ["HomeroomTerminalUI"]),
        .library(name: "HomeroomWeb", targets: ["HomeroomWeb"]),
    ],
    targets: [
        // C libraries from Debian, wrapped so their types stay inside one module each.
        .systemLibrary(name: "CNNG", path: "Sources/CNNG"),
        .systemLibrary(name: "CLinuxEvents", path: "Sources/CLinuxEvents"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CSodium", path: "Sources/CSodium"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL"),
        .target(
            name: "CHomeroomProto",
            path: "Sources/CHomeroomProto",
            cSettings: [.unsafeFlags(["-Wno-everything"])],
            linkerSettings: [.linkedLibrary("protobuf-c")]
        ),

        // What every layer above Core shares: the logger, the clocks, JSON text.
        .target(name: "HomeroomSupport", swiftSettings: strict),
        // Pure, deterministic room-state engine: no I/O, no clock reads.
        .target(name: "HomeroomCore", swiftSettings: strict),
        // The node's policy, pure as Core is: admission and numbering of writes, what it takes
        // from peers, where numbering continues after a restart. The node is its shell.
        .target(name: "HomeroomEngine", dependencies: ["HomeroomCore"], swiftSettings: strict),
        // The seeded simulation: several engines, clients, a lossy network, partitions, restarts.
        .target(name: "HomeroomSimulation", dependencies: ["HomeroomCore", "HomeroomEngine"], swiftSettings: strict),
        // Swift <-> protobuf mapping, limits and validation of untrusted bytes.
        .target(name: "HomeroomWire", dependencies: ["HomeroomCore", "CHomeroomProto"], swiftSettings: strict),
        // The SP transport (wire-compatible with nng), cluster membership, anti-entropy.
        .target(name: "HomeroomNode", dependencies: ["HomeroomCore", "HomeroomEngine", "HomeroomWire", "HomeroomSupport", "CLinuxEvents", "CSQLite", "CSodium", "COpenSSL"], swiftSettings: strict),
        // libnng itself, for the benchmark's baselines and the tests that compare with it:
        // nothing a node or client runs links it (docs/NNG.md).
        .target(name: "HomeroomNNG", dependencies: ["HomeroomNode", "CNNG"], swiftSettings: strict),
        // The only door between a UI and the engine: room, user, stream, message, monitor contexts.
        .target(name: "HomeroomContext", dependencies: ["HomeroomCore", "HomeroomSupport", "HomeroomNode"], swiftSettings: strict),
        // Terminal scenes and components, themed by a JSON config.
        .target(name: "HomeroomTerminalUI", dependencies: ["HomeroomContext"], swiftSettings: strict),
        // The browser UI beside the terminal's: an HTTP and WebSocket server (its own, over
        // Glibc and eventfd; OpenSSL only for the handshake's SHA-1) serving ES modules, and per browser
        // a ContextPool whose read models go to the page as JSON.
        .target(name: "HomeroomWeb", dependencies: ["HomeroomContext", "HomeroomSupport", "COpenSSL", "CLinuxEvents"], swiftSettings: strict),

        .executableTarget(name: "homeroom", dependencies: ["HomeroomCore", "HomeroomSupport", "HomeroomSimulation", "HomeroomWire", "HomeroomNode", "HomeroomContext", "HomeroomTerminalUI", "HomeroomWeb", "HomeroomChaosKit"], swiftSettings: strict),
        // The bench borrows the tests' raw-socket adversary (HomeroomTestSupport) for its resources suite.
        .executableTarget(name: "homeroom-bench", dependencies: ["HomeroomCore", "HomeroomSupport", "HomeroomWire", "HomeroomNode", "HomeroomNNG", "HomeroomContext", "HomeroomTestSupport", "HomeroomHarness"], swiftSettings: strict),
        // Child processes and network namespaces for the chaos harness and the benchmarks.
        .target(name: "HomeroomHarness", swiftSettings: strict),
        // The chaos harness as a library: workload, observatory, checker and report (shared by
        // `homeroom verify`, which points them at a running cluster), nemesis and nodes.
        .target(name: "HomeroomChaosKit", dependencies: ["HomeroomCore", "HomeroomEngine", "HomeroomSupport", "HomeroomWire", "HomeroomNode", "HomeroomHarness"], swiftSettings: strict),
        // Partition and chaos runs against real `homeroom node` processes, with a checker.
        .executableTarget(name: "homeroom-chaos", dependencies: ["HomeroomChaosKit"], swiftSettings: strict),

        .testTarget(name: "HomeroomCoreTests", dependencies: ["HomeroomCore"], swiftSettings: strict),
        .testTarget(name: "HomeroomEngineTests", dependencies: ["HomeroomEngine", "HomeroomSimulation", "HomeroomCore"], swiftSettings: strict),
        .testTarget(name: "HomeroomWireTests", dependencies: ["HomeroomWire", "HomeroomCore"], swiftSettings: strict),
        // Spawns `homeroom node` children for the node and CLI tests.
        .target(name: "HomeroomTestSupport", path: "Tests/HomeroomTestSupport", swiftSettings: strict),
        .testTarget(name: "HomeroomNodeTests", dependencies: ["HomeroomNode", "HomeroomNNG", "HomeroomWire", "HomeroomCore", "HomeroomTestSupport"], swiftSettings: strict),
        .testTarget(name: "HomeroomContextTests", dependencies: ["HomeroomContext", "HomeroomNode", "HomeroomCore"], swiftSettings: strict),
        .testTarget(name: "HomeroomWebTests", dependencies: ["HomeroomWeb", "HomeroomContext", "HomeroomCore", "HomeroomSupport", "HomeroomTestSupport"], swiftSettings: strict),
        .testTarget(name: "HomeroomTerminalUITests", dependencies: ["HomeroomTerminalUI", "HomeroomContext", "HomeroomCore"], swiftSettings: strict),
        // The chaos checker's pure parts (the harness itself runs in Deploy/test.sh).
        .testTarget(name: "HomeroomChaosTests", dependencies: ["HomeroomChaosKit", "HomeroomSupport"], swiftSettings: strict),
        .testTarget(name: "HomeroomCLITests", dependencies: ["HomeroomNode", "HomeroomEngine", "HomeroomCore", "HomeroomTestSupport"], swiftSettings: strict),
    ]
)
