"""The client's tables against the running API's OpenAPI document: every operation under /api/v1
is declared (method, path, operationId), with the same required body fields, query and header
parameters, and sent by a method; every tool is declared with exactly its fields and has a method
whose required arguments are the tool's required fields. A failure names what differs."""

from __future__ import annotations

import ast
import inspect
import unittest
from typing import Any, Dict, Set, Tuple

from support import media_credits, stack_client

COMMON = set(media_credits.COMMON_TOOL_FIELDS)


class OpenApiCoverageTest(unittest.TestCase):
    document: Dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        cls.document = stack_client().openapi()

    def resolve(self, schema: Dict[str, Any]) -> Dict[str, Any]:
        while "$ref" in schema:
            schema = self.document["components"]["schemas"][schema["$ref"].split("/")[-1]]
        return schema

    def operations(self) -> Dict[str, Tuple[str, str, Dict[str, Any]]]:
        found = {}
        for path, methods in self.document["paths"].items():
            if not path.startswith("/api/v1/"):
                continue
            for method, operation in methods.items():
                if method in ("get", "put", "post", "patch", "delete", "head"):
                    found[operation["operationId"]] = (method.upper(), path, operation)
        return found

    def test_every_operation_is_declared_with_its_method_and_path(self) -> None:
        documented = {op_id: (method, path) for op_id, (method, path, _) in self.operations().items()}
        declared = {op_id: (op.method, op.path) for op_id, op in media_credits.OPERATIONS.items()}
        self.assertGreaterEqual(len(documented), 40)
        problems = [
            f"not covered by the client: {method} {path} ({op_id})"
            for op_id, (method, path) in documented.items()
            if op_id not in declared
        ]
        problems += [f"declared but not in the API: {op_id}" for op_id in declared if op_id not in documented]
        problems += [
            f"{op_id} is {' '.join(documented[op_id])} in the API, {' '.join(where)} in the client"
            for op_id, where in declared.items()
            if op_id in documented and where != documented[op_id]
        ]
        if problems:
            self.fail("OPERATIONS in media_credits.py against /api/v1/openapi.json:\n" + "\n".join(problems))

    def test_request_bodies_queries_and_headers_match(self) -> None:
        for op_id, (_, _, operation) in self.operations().items():
            declared = media_credits.OPERATIONS.get(op_id)
            if declared is None:
                continue  # reported by the test above
            with self.subTest(op_id):
                content = operation.get("requestBody", {}).get("content", {})
                bodies = {
                    kind: tuple(sorted(self.resolve(media.get("schema", {})).get("required", [])))
                    for kind, media in content.items()
                }
                self.assertEqual(
                    {kind: tuple(sorted(fields)) for kind, fields in declared.bodies.items()},
                    bodies,
                    "body content types and required fields",
                )
                parameters = operation.get("parameters", [])
                self.assertEqual(
                    set(declared.query), {p["name"] for p in parameters if p["in"] == "query"}, "query parameters"
                )
                self.assertEqual(
                    set(declared.headers),
                    {p["name"].lower() for p in parameters if p["in"] == "header"},
                    "header parameters",
                )

    def test_every_declared_operation_is_sent_by_a_method(self) -> None:
        sent: Set[str] = {tool.operation_id for tool in media_credits.TOOLS.values()}  # through call()
        tree = ast.parse(inspect.getsource(media_credits.MediaCredits))
        for node in ast.walk(tree):
            # self._op("getJob", ...) and OPERATIONS["createUpload"]
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "_op"
                and node.args
            ):
                first = node.args[0]
                if isinstance(first, ast.Constant):
                    sent.add(first.value)
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "OPERATIONS":
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    sent.add(node.slice.value)
        self.assertEqual(
            sent, set(media_credits.OPERATIONS), "operations declared but sent by no method, or sent but undeclared"
        )

    def test_every_tool_is_declared_with_its_fields(self) -> None:
        quote_request = self.resolve(
            self.operations()["createQuote"][2]["requestBody"]["content"]["application/json"]["schema"]
        )
        self.assertEqual(
            set(media_credits.TOOLS), set(quote_request["properties"]["tool"]["enum"]), "the tools (QuoteRequest.tool)"
        )
        for name, tool in media_credits.TOOLS.items():
            with self.subTest(name):
                operation = self.document["paths"][f"/api/v1/{name}"]["post"]
                self.assertEqual(operation["operationId"], tool.operation_id)
                schema = self.resolve(operation["requestBody"]["content"]["application/json"]["schema"])
                self.assertEqual(set(tool.required), set(schema.get("required", [])), "required fields")
                self.assertEqual(set(tool.required + tool.optional) | COMMON, set(schema["properties"]), "fields")

    def schema_of(self, op_id: str) -> Dict[str, Any]:
        return self.resolve(self.operations()[op_id][2]["requestBody"]["content"]["application/json"]["schema"])

    def keyword_fields(self, method: Any, *left_out: str) -> Set[str]:
        """A method's arguments in camelCase, those that are no body field left out."""
        return {
            media_credits._camel(p.name)
            for p in list(inspect.signature(method).parameters.values())[1:]
            if p.name not in left_out and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }

    def test_pipeline_and_template_methods_take_the_request_s_fields(self) -> None:
        client = media_credits.MediaCredits
        self.assertEqual(
            self.keyword_fields(client.create_pipeline, "idempotency_key"),
            set(self.schema_of("createPipeline")["properties"]),
            "MediaCredits.create_pipeline against PipelineRequest",
        )
        # A quote prices a tool call (quote()) or a pipeline (quote_pipeline()).
        self.assertEqual(
            self.keyword_fields(client.quote_pipeline) | {"tool", "params"},
            set(self.schema_of("createQuote")["properties"]),
            "MediaCredits.quote_pipeline and quote against QuoteRequest",
        )
        self.assertEqual(
            self.keyword_fields(client.create_template),
            set(self.schema_of("createTemplate")["properties"]),
            "MediaCredits.create_template against TemplateRequest",
        )
        step = self.resolve(self.schema_of("createPipeline")["properties"]["steps"]["items"])
        self.assertEqual(set(step["properties"]), {"tool", "params"}, "a step's fields")
        self.assertEqual(set(media_credits.TOOLS), set(step["properties"]["tool"]["enum"]), "the tools of a step")

    def test_each_tool_method_requires_exactly_the_tool_s_required_fields(self) -> None:
        for name, tool in media_credits.TOOLS.items():
            with self.subTest(name):
                method = getattr(media_credits.MediaCredits, tool.method_name)
                parameters = list(inspect.signature(method).parameters.values())[1:]
                required = {
                    media_credits._camel(p.name)
                    for p in parameters
                    if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
                }
                self.assertEqual(required, set(tool.required), f"arguments of MediaCredits.{tool.method_name}")


if __name__ == "__main__":
    unittest.main()
