"""Register's 200 is one union told apart by `status`: a replay (the request's own status) or `inert`.

openapi-python-client and its kind read `ApprovalRequest | Inert` from it, and a client can switch on
`status` alone instead of guessing from which fields came back.
"""

import pytest
import yaml

from approvals.models import Status


@pytest.fixture
def schema(client) -> dict:
    return yaml.safe_load(client.get("/api/schema/").content)


def resolve(schema: dict, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def test_the_200_of_register_is_a_oneof_with_a_status_discriminator(schema):
    answer = schema["paths"]["/api/v1/approvals"]["post"]["responses"]["200"]["content"]["application/json"]
    union = resolve(schema, answer["schema"]["$ref"])

    assert union["discriminator"]["propertyName"] == "status"
    mapping = union["discriminator"]["mapping"]
    assert set(mapping) == {*Status.values, "inert", "allowed"}
    assert {ref for status, ref in mapping.items() if status not in ("inert", "allowed")} == {
        "#/components/schemas/ApprovalRequest"
    }
    assert mapping["inert"] == "#/components/schemas/Inert"
    assert mapping["allowed"] == "#/components/schemas/Allowed"  # a condition false, or a shadow rule
    assert sorted(one["$ref"] for one in union["oneOf"]) == sorted(set(mapping.values()))


def test_each_status_value_names_one_shape(schema):
    """Every value the discriminator maps is one its target declares, and no other target declares it."""
    components = schema["components"]["schemas"]
    declared = {
        name: set(components[components[name]["properties"]["status"]["$ref"].rsplit("/", 1)[1]]["enum"])
        for name in ("ApprovalRequest", "Inert", "Allowed")
    }

    assert declared["Inert"] == {"inert"}
    assert declared["Allowed"] == {"allowed"}
    assert declared["ApprovalRequest"] == set(Status.values)
    assert not declared["Inert"] & declared["ApprovalRequest"]
