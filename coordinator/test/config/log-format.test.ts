import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

describe('the log format setting', () => {
  it('is auto by default, and read from DROVER_LOG_FORMAT or --log-format (which wins), in any case', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ DROVER_LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(loadConfig({ DROVER_LOG_FORMAT: 'json' }, { logFormat: ' pretty ' }).logFormat).toBe('pretty');
    expect(loadConfig({ DROVER_LOG_FORMAT: 'pretty' }, { logFormat: 'auto' }).logFormat).toBe('auto');
    expect(loadConfig({ DROVER_LOG_FORMAT: '' }).logFormat).toBe('auto');
  });

  it('refuses anything else, naming where it came from', () => {
    expect(() => loadConfig({ DROVER_LOG_FORMAT: 'yaml' })).toThrow(
      new ConfigError(['DROVER_LOG_FORMAT: expected one of json, pretty, auto, got `yaml`']),
    );
    expect(() => loadConfig({}, { logFormat: 'text' })).toThrow(
      new ConfigError(['--log-format: expected one of json, pretty, auto, got `text`']),
    );
  });
});
