"""kcodec.fuzz: a schema-aware fuzzer for Kafka brokers, and kcodec's own decoders' self-check.

* ``layout``: where lengths, counts, varints, null markers and tags are in an encoded body;
* ``generate``: requests of any API/version from the specs, with edge values (``kcodec.protocol.strategies``);
* ``mutate``: structure-aware mutations of bodies and frames;
* ``wire``: raw frames, a raw connection, the liveness probe;
* ``oracle``: whether a reply is a finding;
* ``findings``: finding files, de-duplication, minimization;
* ``session``: a fuzzing session against one broker (``FuzzConfig``, ``Session``, ``replay_frame``);
* ``replay``: reproduce a finding file; ``report``: the summary of a session;
* ``selfcheck``: what kcodec's decoders must do with any input (used by the fuzz harnesses).

Needs hypothesis (``pip install 'kcodec[fuzz]'``) for generation. ``kcodec fuzz`` is the command.
"""

from __future__ import annotations
