/** The self-description bodies: GET /task/workflow and GET /task/metaprompt (free-form by the interface; these are their fields). */
import { Type } from 'typebox';
import { component } from './common.js';
import { TaskSpecInput } from './spec.js';

const Open = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });

export const Workflow = component('Workflow', Type.Object({
  version: Type.String(),
  summary: Type.String(),
  states: Open('The values of status, phase and activity, and what they mean.'),
  transitions: Type.Array(Type.Object({ from: Type.String(), trigger: Type.String(), to: Type.String(), note: Type.String() })),
  routes: Type.Array(Type.Object({ method: Type.String(), path: Type.String(), does: Type.String() })),
  events: Type.Object({ kinds: Type.Array(Type.String()), wire: Type.String() }),
  polling: Type.String(),
  retry: Type.String(),
}, { additionalProperties: true }));

export const Metaprompt = component('Metaprompt', Type.Object({
  version: Type.String(),
  spec_schema: Open('The JSON Schema of a task spec (TaskSpecInput).'),
  output_kinds: Open('What the rows of each output kind look like.'),
  kinds: Type.Array(Type.String()),
  tools: Type.Array(Type.String()),
  default_limits: Open('The limits a spec gets when it names none.'),
  reserved_row_fields: Open('Fields every row carries besides its own.'),
  metaprompt: Type.String({ description: 'Instructions a caller-side agent can follow to write a good spec.' }),
  example: TaskSpecInput,
}, { additionalProperties: true }));
