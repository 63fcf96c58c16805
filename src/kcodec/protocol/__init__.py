"""The codec core: Kafka's wire format, the message model and its codecs, frames, the API
registry, JSON conversion, partial reading, error codes and sentinels, hypothesis strategies and the
construct back end, the readers of known off-spec peer layouts (``quirks``) and the release
version coverage. It imports no network code (``kcodec.net``)."""
