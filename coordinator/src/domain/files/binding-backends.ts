import type { StorageBinding } from '../model/storage-bindings.js';
import type { StorageBackend, StorageBackends } from '../../storage/backend.js';

/** The storage backend of each binding, made once per binding and then remembered. */
export class BindingBackends {
  private readonly cache = new Map<string, StorageBackend>();

  constructor(
    private readonly backends: StorageBackends,
    /** A binding by id, deleted or not. */
    private readonly findBinding: (bindingId: string) => Promise<StorageBinding | null>,
  ) {}

  /** The binding's backend; throws UnsupportedBackendError for a kind without implementation. */
  of(binding: StorageBinding): StorageBackend {
    const cached = this.cache.get(binding.id);
    if (cached) return cached;
    const backend = this.backends.forBinding(binding);
    this.cache.set(binding.id, backend);
    return backend;
  }

  /** A binding's backend by id, deleted bindings included (their blobs are still deleted). */
  async byId(bindingId: string): Promise<StorageBackend> {
    const cached = this.cache.get(bindingId);
    if (cached) return cached;
    const binding = await this.findBinding(bindingId);
    if (!binding) throw new Error(`storage binding ${bindingId} not found`);
    return this.of(binding);
  }
}
