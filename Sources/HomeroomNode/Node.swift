// Node: nng transport and cluster.
