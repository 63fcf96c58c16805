"""The spec model: small single-purpose classes that parse and validate Kafka message specs."""

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.fields import FieldSpec
from kcodec.codegen.spec.messages import MessageSpec
from kcodec.codegen.spec.structs import StructSpec
from kcodec.codegen.spec.types import FieldType
from kcodec.codegen.spec.versions import Versions

__all__ = ["FieldSpec", "FieldType", "MessageSpec", "SpecError", "StructSpec", "Versions"]
