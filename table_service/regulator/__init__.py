"""The regulator's tools that know tables and games: replay a round through the rules,
the records and the RTP report, the read models checked against the log, the export
bundle and its verifier, the read-model watchdog.

The generic tamper-evident log they stand on (chain, checkpoints, notes, tiles, proofs,
witness, export and verify) is ``audit/``, which imports nothing of the table service.
"""
