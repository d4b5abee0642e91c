import { SETTINGS } from '../../settings/settings.registry';
import { isLocalBaseUrl, PROVIDER_DEFAULTS, resolveBaseUrl } from './provider-defaults';

describe('PROVIDER_DEFAULTS', () => {
  it('uses the settings default models', () => {
    for (const [name, settings] of Object.entries(SETTINGS.ai_providers.default)) {
      expect(PROVIDER_DEFAULTS[name as keyof typeof PROVIDER_DEFAULTS].defaultModel).toBe(settings.model);
    }
  });

  it('marks only Ollama local by default and only the cloud APIs as needing a key', () => {
    const local = Object.entries(PROVIDER_DEFAULTS)
      .filter(([, d]) => d.capabilities.local)
      .map(([n]) => n);
    const keyed = Object.entries(PROVIDER_DEFAULTS)
      .filter(([, d]) => d.requiresApiKey)
      .map(([n]) => n);
    expect(local).toEqual(['ollama']);
    expect(keyed).toEqual(['openai', 'anthropic', 'gemini', 'grok']);
  });
});

describe('resolveBaseUrl', () => {
  it('falls back to the official endpoints', () => {
    expect(resolveBaseUrl('openai', null)).toBe('https://api.openai.com/v1');
    expect(resolveBaseUrl('grok', '  ')).toBe('https://api.x.ai/v1');
    expect(resolveBaseUrl('anthropic', null)).toBe('https://api.anthropic.com');
    expect(resolveBaseUrl('gemini', null)).toBe('https://generativelanguage.googleapis.com');
    expect(resolveBaseUrl('ollama', null)).toBe('http://localhost:11434/v1');
    expect(resolveBaseUrl('openai_compatible', null)).toBeNull();
  });

  it('adds /v1 to an Ollama server URL without a path, and keeps other paths', () => {
    expect(resolveBaseUrl('ollama', 'http://192.168.1.20:11434')).toBe('http://192.168.1.20:11434/v1');
    expect(resolveBaseUrl('ollama', 'http://192.168.1.20:11434/')).toBe('http://192.168.1.20:11434/v1');
    expect(resolveBaseUrl('ollama', 'http://gpu-box:11434/v1/')).toBe('http://gpu-box:11434/v1');
    expect(resolveBaseUrl('openai_compatible', 'http://127.0.0.1:8000')).toBe('http://127.0.0.1:8000');
  });

  it('refuses what is not an http(s) URL', () => {
    expect(resolveBaseUrl('openai_compatible', 'not a url')).toBeNull();
    expect(resolveBaseUrl('ollama', 'ftp://host/')).toBeNull();
  });
});

describe('isLocalBaseUrl', () => {
  it.each([
    ['http://localhost:1234/v1', true],
    ['http://127.0.0.1:8000/v1', true],
    ['http://10.1.2.3/v1', true],
    ['http://172.20.0.5:8080/v1', true],
    ['http://192.168.178.2:11434', true],
    ['http://[::1]:8000/v1', true],
    ['http://[fd12::1]:8000/v1', true],
    ['http://gpu-box:8000/v1', true],
    ['http://lmstudio.local:1234/v1', true],
    ['https://openrouter.ai/api/v1', false],
    ['http://172.32.0.1/v1', false],
    ['http://8.8.8.8/v1', false],
    ['nonsense', false],
  ])('%s -> %s', (url, local) => {
    expect(isLocalBaseUrl(url)).toBe(local);
  });
});
