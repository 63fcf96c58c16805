"""The spec model: small single-purpose classes that parse and validate Kafka message specs."""

from codegen.spec.errors import SpecError
from codegen.spec.fields import FieldSpec
from codegen.spec.messages import MessageSpec
from codegen.spec.structs import StructSpec
from codegen.spec.types import FieldType
from codegen.spec.versions import Versions

__all__ = ["FieldSpec", "FieldType", "MessageSpec", "SpecError", "StructSpec", "Versions"]
