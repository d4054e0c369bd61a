/** The source text of the client's generated wire types (see generate-client-types.ts). */
import openapiTS, { astToString } from 'openapi-typescript';
import { buildOpenApiDocument } from '../src/http/openapi.js';

const HEADER = `/**
 * Generated from Quarry's OpenAPI document by scripts/generate-client-types.ts: do not edit.
 * The shapes are declared once, in the server's contract (src/contract).
 */

`;

export async function clientTypesSource(): Promise<string> {
  const document = await buildOpenApiDocument();
  const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { alphabetize: false, exportType: true });
  return HEADER + astToString(ast);
}
