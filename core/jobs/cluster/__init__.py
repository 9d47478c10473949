"""The cluster backend: jobs and benchmarks on the named targets (nodes) of a Ray cluster.

``core.jobs.cluster.client`` connects and submits (the app's and the command line's side),
``core.jobs.cluster.job`` is a job's handle there, ``core.jobs.cluster.agent`` the actor that runs jobs on
each node (a node describes itself with the job ``cluster.hardware``), and ``core.jobs.cluster.local`` starts a
two-node cluster on one machine for trying it out and for tests.
"""
