"""The OpenAPI schema's error answers: one serializer for the API's error shape and an
AutoSchema (REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS) that documents the 4xx answers every
operation can give from how it is built. Answers that depend on what the code does with
the input (409, a 404 for a name in the body ...) the views declare themselves with
``extend_schema(responses=...)``; a status a view declares is never replaced here."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import permissions, serializers
from rest_framework.authentication import SessionAuthentication

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# config/middleware.py refuses C0 control characters and DEL anywhere in the path or the query.
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"
# The same for a parameter DRF also refuses blank (a CharField that trims): one character
# at least that is neither whitespace nor a control character.
NOT_BLANK_NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"


class ErrorSerializer(serializers.Serializer):
    """Every API error (config/exceptions.py)."""

    detail = serializers.CharField(help_text="What went wrong, readable by a person.")
    code = serializers.CharField(help_text="A stable machine-readable name, e.g. not_found, invalid, conflict.")
    errors = serializers.DictField(
        required=False, help_text="Validation errors per field, as the API checked them (400 on bad input only)."
    )

    class Meta:
        ref_name = "Error"


def error_response(description: str) -> OpenApiResponse:
    """An error answer for ``extend_schema(responses={code: error_response("...")})``."""
    return OpenApiResponse(ErrorSerializer, description=description)


class ProjectAutoSchema(AutoSchema):
    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and isinstance(field, serializers.FileField):
            # A file sent in a multipart body is bytes, not a URL: without
            # COMPONENT_SPLIT_REQUEST drf-spectacular says "format: uri", and Swagger UI's
            # "Try it out" then offers a text box instead of a file chooser.
            schema["format"] = "binary"
        # DRF refuses "" for a CharField without allow_blank, and whitespace only too when
        # it trims; drf-spectacular says neither, so a schema-valid body could be refused.
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and not field.allow_blank
            and schema.get("type") == "string"
        ):
            schema.setdefault("minLength", 1)
            if field.trim_whitespace:
                schema.setdefault("pattern", r"\S")
        return schema

    def _get_parameters(self):
        parameters = super()._get_parameters()
        for parameter in parameters:
            schema = parameter.get("schema", {})
            free_text = schema.get("type") == "string" and "enum" not in schema
            if parameter["in"] not in ("path", "query") or not free_text:
                continue
            if "pattern" not in schema:
                schema["pattern"] = NO_CONTROL_CHARACTERS
            elif schema["pattern"] == r"\S":  # a trimmed CharField's (map_serializer_field)
                schema["pattern"] = NOT_BLANK_NO_CONTROL_CHARACTERS
        return parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, description in self._error_answers():
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(error_response(description), str(code))
        return dict(sorted(responses.items()))

    def _error_answers(self) -> list[tuple[int, str]]:
        answers = []
        takes_body = self.method in UNSAFE_METHODS and self.get_request_serializer() is not None
        parameters = self._get_parameters()
        # config/middleware.py refuses a control character anywhere in the path or the
        # query before any view runs, so a path parameter can give a 400 too.
        if takes_body or any(p["in"] in ("query", "path") for p in parameters):
            answers.append((400, "The body or a parameter is malformed or invalid (see errors)."))
        if takes_body:
            answers.append((413, "The body is larger than the server accepts."))
            answers.append((415, "The body's Content-Type is not one this operation accepts."))
        perms = self.view.get_permissions()
        authenticators = self.view.get_authenticators()
        if authenticators and not any(isinstance(p, permissions.AllowAny) for p in perms):
            answers.append((401, "No credentials, or an unknown or revoked token."))
            # A role permission refuses other roles; a browser session must also pass the
            # CSRF check on writes (token requests have none).
            role_checked = any(type(p) is not permissions.IsAuthenticated for p in perms)
            csrf_checked = self.method in UNSAFE_METHODS and any(
                isinstance(a, SessionAuthentication) for a in authenticators
            )
            if role_checked or csrf_checked:
                answers.append((403, "Your role may not do this (or a session write lacks its CSRF token)."))
        if any(p["in"] == "path" for p in parameters):
            answers.append((404, "Nothing exists under the path's names or ids."))
        return answers
