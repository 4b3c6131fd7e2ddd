// The JSON Schema 2020-12 meta-schema, its vocabularies folded into one schema: every keyword
// with the shape the specification gives it. The live check of a contract's schema holds a
// schema to it; the engine's own check on save stays the one that decides.

const schema = { $ref: "#" };
const schemaArray = { type: "array", minItems: 1, items: schema };
const count = { type: "integer", minimum: 0 };
const stringArray = { type: "array", items: { type: "string" }, uniqueItems: true };
const simpleTypes = { enum: ["array", "boolean", "integer", "null", "number", "object", "string"] };
const schemaMap = { type: "object", additionalProperties: schema };
const anchor = { type: "string", pattern: "^[A-Za-z_][-A-Za-z0-9._]*$" };

export const META_SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: ["object", "boolean"],
  properties: {
    // core
    $id: { type: "string", pattern: "^[^#]*#?$" },
    $schema: { type: "string" },
    $ref: { type: "string" },
    $anchor: anchor,
    $dynamicRef: { type: "string" },
    $dynamicAnchor: anchor,
    $vocabulary: { type: "object", additionalProperties: { type: "boolean" } },
    $comment: { type: "string" },
    $defs: schemaMap,
    definitions: schemaMap,
    // applicator
    prefixItems: schemaArray,
    items: schema,
    contains: schema,
    additionalProperties: schema,
    properties: schemaMap,
    patternProperties: schemaMap,
    dependentSchemas: schemaMap,
    propertyNames: schema,
    if: schema,
    then: schema,
    else: schema,
    allOf: schemaArray,
    anyOf: schemaArray,
    oneOf: schemaArray,
    not: schema,
    // unevaluated
    unevaluatedItems: schema,
    unevaluatedProperties: schema,
    // validation
    type: { anyOf: [simpleTypes, { type: "array", items: simpleTypes, minItems: 1, uniqueItems: true }] },
    enum: { type: "array" },
    multipleOf: { type: "number", exclusiveMinimum: 0 },
    maximum: { type: "number" },
    exclusiveMaximum: { type: "number" },
    minimum: { type: "number" },
    exclusiveMinimum: { type: "number" },
    maxLength: count,
    minLength: count,
    pattern: { type: "string" },
    maxItems: count,
    minItems: count,
    uniqueItems: { type: "boolean" },
    maxContains: count,
    minContains: count,
    maxProperties: count,
    minProperties: count,
    required: stringArray,
    dependentRequired: { type: "object", additionalProperties: stringArray },
    // meta-data
    title: { type: "string" },
    description: { type: "string" },
    deprecated: { type: "boolean" },
    readOnly: { type: "boolean" },
    writeOnly: { type: "boolean" },
    examples: { type: "array" },
    // format, content
    format: { type: "string" },
    contentEncoding: { type: "string" },
    contentMediaType: { type: "string" },
    contentSchema: schema,
  },
} as const;
