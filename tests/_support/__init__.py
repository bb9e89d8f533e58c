"""Helpers shared by tests of several subjects (tests/README.md says what each holds).

- `modes`: run an agent or a client in the mode a test is given (both modes come from
  the ``stream`` fixture of tests/conftest.py).
- `loopback`: the fake HTTP servers' shared part and a raw TCP server; each provider
  plugin's ``tests/<plugin>/_fake_server.py`` builds on it.
- `strategies`: hypothesis strategies of the wire types (messages, contents, threads).
- `streamed`: runs that keep the streamed updates (the hook and middleware-library tests).
- `redis_server`: a real redis-server for the Redis plugin's tests.
- `entry_points`: made-up plugin entry points for plugin discovery.
"""
