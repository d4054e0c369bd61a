/**
 * Quarry's A2A agent card (decisions §15.4): who answers at `/a2a`, over which binding and
 * protocol version, how to authenticate, and the one skill. Public, because the A2A clients
 * resolve the card before they send any credential.
 */
import { AgentCard } from '@a2a-js/sdk';
import { QUARRY_VERSION } from '../../package-info.js';

/** The A2A protocol version this endpoint speaks; a request without `A2A-Version` is taken as this one. */
export const A2A_VERSION = '1.0';

/** The card for a service reached at `baseUrl` (no trailing slash), in the SDK's types. */
export function buildAgentCard(baseUrl: string): AgentCard {
  return AgentCard.fromJSON({
    name: 'Quarry',
    description:
      'Runs durable research tasks: give it a question in plain text (or a full task spec as a {"task": …} data part) and it ' +
      'plans, searches and reads the web, and returns structured rows with their sources. Each output of the task is an artifact ' +
      'whose parts are its rows (application/json). Tasks keep running when you disconnect; send more messages to the same taskId to continue one.',
    version: QUARRY_VERSION,
    documentationUrl: `${baseUrl}/docs`,
    supportedInterfaces: [{ url: `${baseUrl}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: A2A_VERSION }],
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    securitySchemes: {
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key', description: 'A Quarry API key.' } },
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'A Quarry API key as a bearer token.' } },
    },
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }, { schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: [
      {
        id: 'research',
        name: 'Research',
        description:
          'Researches a question and returns structured, cited rows: one artifact per output of the task, one data part per row ' +
          '(each row with its _sources). A text message is the research prompt; a data part {"task": <spec>} runs a full spec ' +
          '(see GET /task/metaprompt for its schema).',
        tags: ['research', 'web', 'data extraction', 'citations'],
        examples: ['Find every company making Li-ion cells in the EU, with capacity in GWh.', 'List the open-source vector databases and their licenses.'],
        inputModes: ['text/plain', 'application/json'],
        outputModes: ['application/json'],
        securityRequirements: [],
      },
    ],
  });
}
