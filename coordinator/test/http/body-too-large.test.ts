import { describe, expect, it } from 'vitest';
import { bodyTooLarge } from '../../src/http/error-handler.js';

describe('a body over its limit (413)', () => {
  it("names the limit in bytes, and the setting when the route has the server's", () => {
    expect(bodyTooLarge({ route: 1_048_576, server: 1_048_576 }).toBody()).toEqual({
      statusCode: 413,
      code: 'payload_too_large',
      message:
        'The request body is larger than the limit of 1048576 bytes (the setting DROVER_BODY_LIMIT_BYTES); files go through presigned URLs',
    });
    // A route with a limit of its own (an agent's set of workflows): the setting does not change it.
    expect(bodyTooLarge({ route: 8_388_608, server: 1_048_576 }).message).toBe(
      'The request body is larger than the limit of 8388608 bytes of this route',
    );
  });
});
