import HomeroomCore

/// A node that cannot serve says so and steps aside: /healthz 503, no heartbeats (its
/// peers declare it down), every request refused `unavailable` (its clients move).
extension ClusterNode {
    var wedgeRule: WedgeRule {
        let limit = descriptorLimit
        let bound = config.wedgeDescriptors > 0 ? config.wedgeDescriptors : max(64, limit == Int.max ? Int.max : limit - 64)
        return WedgeRule(maxDescriptors: bound)
    }

    var transportLoops: [(String, SPLoopStats)] {
        var loops = [("rep", replier.stats), ("pub", publisher.stats), ("sub", subscriber.stats)]
        if let clusterPublisher { loops.append(("cluster-pub", clusterPublisher.stats)) }
        return loops
    }

    /// Reads descriptors and loop liveness; wedges or recovers the node.
    func checkHealth() {
        let reading = WedgeRule.Reading(descriptors: ProcessResources.openDescriptors(),
                                        loopSilenceMillis: Dictionary(uniqueKeysWithValues: transportLoops.map { ($0.0, $0.1.silenceMillis) }))
        let rule = wedgeRule
        let (before, after) = state.withLock { state -> (String?, String?) in
            let before = state.wedged
            state.wedged = state.superseded ?? rule.verdict(reading, wedgedNow: before != nil)
            return (before, state.wedged)
        }
        if let after, before == nil {
            metrics.add("wedged_total")
            logger.error("node wedged: stepping aside (no heartbeats, requests refused unavailable, /healthz 503) until it recovers; if it does not, restart it",
                         ["why": after])
        } else if after == nil, let before {
            logger.notice("node recovered: serving and heartbeating again", ["was": before])
        }
    }
}
