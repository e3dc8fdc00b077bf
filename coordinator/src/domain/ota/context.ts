import type { AgentRepository } from '../model/agents.js';
import type { ApplicationRepository } from '../model/applications.js';
import type { DeviceBindingRepository } from '../model/device-bindings.js';
import type { ReleaseRepository } from '../model/releases.js';
import type { RolloutRepository } from '../model/rollouts.js';
import type { Clock } from '../../util/clock.js';
import type { JobEvents } from '../jobs/job-events.js';
import type { OtaEngine } from './engine.js';

/** What the OTA operations need (the coordinator's `app.ctx` has it all). */
export interface OtaContext {
  repos: {
    agents: AgentRepository;
    applications: ApplicationRepository;
    releases: ReleaseRepository;
    deviceBindings: DeviceBindingRepository;
    rollouts: RolloutRepository;
  };
  clock: Clock;
  jobEvents: JobEvents;
  ota: OtaEngine;
}
