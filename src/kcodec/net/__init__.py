"""The network client built on the codec core (``kcodec.protocol``): connections, transport, SASL,
ApiVersions negotiation, cluster views (Metadata), release fingerprints and version reports."""
