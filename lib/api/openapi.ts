import * as z from 'zod';
import type { Route } from './route.ts';

type Components = Record<string, unknown>;

/**
 * JSON Schema of a zod schema for OpenAPI 3.1 (which speaks JSON Schema 2020-12). Named schemas
 * (`.meta({ id })`) move to components, referenced from where they are used.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Components): Record<string, unknown> {
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  const text = JSON.stringify(generated).replaceAll('"#/$defs/', '"#/components/schemas/');
  const { $schema: _schema, $defs, ...rest } = JSON.parse(text) as Record<string, unknown>;
  Object.assign(components, $defs ?? {});
  return rest;
}

/** The parameters of an object schema, one per property. */
function parameters(schema: z.ZodType | undefined, where: 'path' | 'query', components: Components): unknown[] {
  if (schema === undefined) return [];
  const object = jsonSchema(schema, 'input', components) as {
    properties?: Record<string, unknown>;
    required?: string[];
  };
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: property,
  }));
}

/** The OpenAPI 3.1 document of a route table, generated from the routes' own schemas. */
export function openApiDocument(routes: readonly Route[], info: { title: string; version: string }): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Components = {};
  for (const route of routes) {
    if (route.public) continue;
    const headers = Object.entries(route.headers ?? {}).map(([name, description]) => ({
      name,
      in: 'header',
      required: false,
      description,
      schema: { type: 'string' },
    }));
    const operation = {
      operationId: route.operationId,
      summary: route.summary,
      // The role the caller needs (403 missing_role without it): a vendor extension, as OpenAPI has no field for it.
      'x-baton-role': route.role,
      parameters: [
        ...parameters(route.params, 'path', components),
        ...parameters(route.query, 'query', components),
        ...headers,
      ],
      ...(route.body === undefined
        ? {}
        : {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: jsonSchema(route.body, 'input', components) } },
            },
          }),
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, response]) => [
          status,
          {
            description: response.description,
            ...(response.schema === undefined
              ? {}
              : {
                  content: {
                    [response.contentType ?? 'application/json']: {
                      schema: jsonSchema(response.schema, 'output', components),
                    },
                  },
                }),
          },
        ]),
      ),
    };
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      ...info,
      description:
        'The Baton HTTP API. Deployed behind a Lambda function URL with IAM auth (SigV4); a caller sees only the tenants mapped to its principal, and may use only the operations its roles allow (`x-baton-role` on each operation; 403 `missing_role` otherwise).',
    },
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description: 'AWS Signature Version 4 (service lambda): the function URL uses IAM auth',
        },
      },
    },
    security: [{ sigv4: [] }],
  };
}
