"""The cluster backend: jobs and benchmarks on the named targets (nodes) of a Ray cluster.

``core.jobs.cluster.client`` connects and submits (the app's and the command line's side), after
``core.jobs.cluster.auth`` has checked that the cluster uses Ray's token authentication and that this process holds
its token; ``core.jobs.cluster.job`` is a job's handle there, ``core.jobs.cluster.agent`` the actor that runs jobs on
each node for one client (a node describes itself with the job ``cluster.hardware``), whose answers are bytes read by
``core.jobs.cluster.answers`` (nothing from the cluster is unpickled), and ``core.jobs.cluster.local`` starts
two-node clusters on one machine for trying it out and for tests.
"""
