"""The cluster backend: jobs and benchmarks on the named targets (nodes) of a Ray cluster.

``core.jobs.cluster.client`` connects and submits (the app's and the command line's side),
``core.jobs.cluster.agent`` is the actor that runs jobs on each node, ``core.jobs.cluster.hardware`` describes a
node, ``core.jobs.cluster.local`` starts a two-node cluster on one machine for trying it out and for tests.
"""
