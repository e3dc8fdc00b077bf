import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import {
  UploadCancelled,
  UploadFailure,
  uploadFile,
  type StoredFile,
  type UploadProgress,
  type UploadRequest,
} from '../api/files';
import { humanSize } from './bytes';
import { plainWords } from './ErrorMessage';
import { FieldError, fieldErrors, FormError, unreadableNumbers } from './FieldErrors';

export interface FileUploadProps {
  orgId: string;
  /** The binding to upload into; left out, the coordinator takes the organization's only binding. */
  bindingId?: string;
  /**
   * A cleanup rule the caller imposes (a release's artifact must be `persistent`): the form then
   * does not offer the choice. Left out, the form offers `ttl` (with its time to live) and `persistent`.
   */
  cleanupRule?: 'ttl' | 'persistent';
  /** The form's title. */
  title?: string;
  /** Called with the file once it is active. */
  onUploaded?: (file: StoredFile) => void;
  /**
   * Renders a group inside the caller's form instead of a form of its own (forms cannot nest):
   * its Upload button then uploads without submitting the caller's form.
   */
  embedded?: boolean;
  /** The label of the file input (default `File`). */
  fileLabel?: string;
}

const FIELDS = ['filename', 'cleanupRule', 'ttlSeconds', 'bindingId', 'contentType'] as const;
const TTL_UNITS = [
  { label: 'minutes', seconds: 60 },
  { label: 'hours', seconds: 3_600 },
  { label: 'days', seconds: 86_400 },
];

/** The time to live the coordinator takes (`ttlSeconds`): 1 minute to 90 days. */
const TTL_SECONDS = { min: 60, max: 90 * 86_400 };

/**
 * What is wrong with "Keep for" `value` in the unit chosen next to it (`unitSeconds`), in those
 * units, or null: checked before anything is sent, since the coordinator would speak seconds.
 */
export function ttlProblem(value: string, unitSeconds: number): string | null {
  const unit = TTL_UNITS.find((u) => u.seconds === unitSeconds)?.label ?? 'seconds';
  const number = value.trim() === '' ? NaN : Number(value);
  const seconds = Math.round(number * unitSeconds);
  if (!Number.isFinite(number) || seconds < TTL_SECONDS.min || seconds > TTL_SECONDS.max) {
    const max = TTL_SECONDS.max / unitSeconds;
    const range = unitSeconds === 86_400 ? '' : ` (${max.toLocaleString('en')} ${unit})`;
    return `must be from 1 minute to 90 days${range}, got ${value.trim() === '' ? 'nothing' : `${value.trim()} ${unit}`}`;
  }
  return null;
}

const STAGE_WORDS = {
  upload: 'Sending the file failed',
  complete: 'The file was sent, but the coordinator could not complete it',
} as const;

type State =
  | { phase: 'idle' }
  | { phase: 'sending'; progress: UploadProgress }
  | { phase: 'completing' }
  | { phase: 'done'; file: StoredFile }
  | { phase: 'cancelled' }
  | { phase: 'failed'; failure: UploadFailure | ApiError };

/**
 * Uploads one file: choose it, name it, pick its cleanup rule and time to live, then watch the
 * progress bar while the bytes go to the presigned URL; cancel stops the transfer and deletes
 * the pending file. Each failure says which step failed (the coordinator refusing the upload,
 * sending the bytes, completing the file), with the coordinator's reasons next to the fields.
 */
export function FileUpload({
  orgId,
  bindingId,
  cleanupRule,
  title = 'Upload a file',
  onUploaded,
  embedded = false,
  fileLabel = 'File',
}: FileUploadProps) {
  const idPrefix = `upload${useId().replace(/[^a-zA-Z0-9]/g, '')}`;
  const [file, setFile] = useState<File | null>(null);
  const [filename, setFilename] = useState('');
  const [rule, setRule] = useState<'ttl' | 'persistent'>(cleanupRule ?? 'ttl');
  const [ttl, setTtl] = useState('1');
  const [unit, setUnit] = useState(86_400);
  const [state, setState] = useState<State>({ phase: 'idle' });
  const controller = useRef<AbortController | null>(null);
  // The fields, a form of their own or a group inside the caller's: where the number inputs are read.
  const fields = useRef<HTMLDivElement>(null);
  // Leaving the page stops an upload in flight.
  useEffect(() => () => controller.current?.abort(), []);

  const failure = state.phase === 'failed' ? state.failure : null;
  const presignError = failure instanceof UploadFailure && failure.stage === 'presign' ? failure.error : null;
  const errors = fieldErrors(presignError, FIELDS, 'body', idPrefix);
  const busy = state.phase === 'sending' || state.phase === 'completing';
  const chosenRule = cleanupRule ?? rule;

  const [inputKey, setInputKey] = useState(0);

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    if (!file) {
      setState({ phase: 'failed', failure: new ApiError(0, 'no_file', 'Choose a file to upload first.') });
      return;
    }
    // A time to live the browser cannot read (`1e`) is "" as if empty: said as what it is, not as "got nothing".
    const unreadable = fields.current && unreadableNumbers(fields.current, 'body', idPrefix);
    if (unreadable) {
      setState({ phase: 'failed', failure: new UploadFailure('presign', unreadable) });
      return;
    }
    const ttlRefused = chosenRule === 'ttl' ? ttlProblem(ttl, unit) : null;
    if (ttlRefused) {
      // Shown at the field, as the coordinator's own reason would be.
      const detail = { path: 'body.ttlSeconds', message: ttlRefused };
      const refusal = new ApiError(422, 'validation_failed', `Keep for ${ttlRefused}`, [detail]);
      setState({ phase: 'failed', failure: new UploadFailure('presign', refusal) });
      return;
    }
    const request: UploadRequest = { cleanupRule: chosenRule };
    if (bindingId) request.bindingId = bindingId;
    if (filename.trim()) request.filename = filename;
    if (file.type) request.contentType = file.type;
    if (chosenRule === 'ttl') request.ttlSeconds = Math.round(Number(ttl) * unit);
    const abort = new AbortController();
    controller.current = abort;
    setState({ phase: 'sending', progress: { loaded: 0, total: file.size } });
    try {
      const stored = await uploadFile(
        orgId,
        file,
        request,
        (progress) =>
          setState(
            progress.loaded >= progress.total ? { phase: 'completing' } : { phase: 'sending', progress: progress },
          ),
        abort.signal,
      );
      setState({ phase: 'done', file: stored });
      if (embedded) {
        // The caller takes the file over: the group is ready for another one.
        setFile(null);
        setFilename('');
        setInputKey((k) => k + 1);
      }
      onUploaded?.(stored);
    } catch (error) {
      if (error instanceof UploadCancelled) setState({ phase: 'cancelled' });
      else if (error instanceof UploadFailure || error instanceof ApiError)
        setState({ phase: 'failed', failure: error });
      else throw error;
    } finally {
      controller.current = null;
    }
  };

  const body = (
    <>
      <div className="form-grid" ref={fields}>
        <label>
          {fileLabel}
          <input
            key={inputKey}
            type="file"
            disabled={busy}
            onChange={(e) => {
              const chosen = e.target.files?.[0] ?? null;
              setFile(chosen);
              setFilename(chosen?.name ?? '');
            }}
          />
        </label>
        <label>
          Name
          <input {...errors.props('filename')} value={filename} onChange={(e) => setFilename(e.target.value)} />
          <FieldError errors={errors} field="filename" idPrefix={idPrefix} />
        </label>
        {!cleanupRule && (
          <label>
            Cleanup
            <select
              {...errors.props('cleanupRule')}
              value={rule}
              onChange={(e) => setRule(e.target.value as 'ttl' | 'persistent')}
            >
              <option value="ttl">delete it after a time</option>
              <option value="persistent">keep it until deleted</option>
            </select>
            <FieldError errors={errors} field="cleanupRule" idPrefix={idPrefix} />
          </label>
        )}
        {chosenRule === 'ttl' && (
          <div className="field">
            <label>
              Keep for
              <input
                {...errors.props('ttlSeconds')}
                type="number"
                min="1"
                data-example="1"
                value={ttl}
                onChange={(e) => setTtl(e.target.value)}
              />
            </label>
            <label>
              Unit
              <select value={unit} onChange={(e) => setUnit(Number(e.target.value))}>
                {TTL_UNITS.map((u) => (
                  <option key={u.seconds} value={u.seconds}>
                    {u.label}
                  </option>
                ))}
              </select>
            </label>
            <FieldError errors={errors} field="ttlSeconds" idPrefix={idPrefix} />
            <span className="hint">counted from the end of the upload (1 minute to 90 days)</span>
          </div>
        )}
      </div>
      {presignError ? (
        <FormError error={presignError} errors={errors} />
      ) : (
        failure && (
          <div role="alert" className="error">
            <p>
              {failure instanceof UploadFailure && failure.stage !== 'presign' ? `${STAGE_WORDS[failure.stage]}: ` : ''}
              {plainWords(failure instanceof UploadFailure ? failure.error : failure)}
            </p>
          </div>
        )
      )}
      <div className="form-actions">
        {embedded ? (
          <button type="button" disabled={busy} onClick={() => void submit()}>
            Upload
          </button>
        ) : (
          <button type="submit" disabled={busy}>
            Upload
          </button>
        )}
        {busy && (
          <button type="button" onClick={() => controller.current?.abort()}>
            Cancel upload
          </button>
        )}
      </div>
      <UploadStatus state={state} file={file} />
    </>
  );
  if (embedded)
    return (
      <div role="group" className="file-upload" aria-label={title}>
        {body}
      </div>
    );
  return (
    <form className="panel file-upload" onSubmit={(e) => void submit(e)} noValidate aria-label={title}>
      <h2>{title}</h2>
      {body}
    </form>
  );
}

function UploadStatus({ state, file }: { state: State; file: File | null }) {
  const total = state.phase === 'sending' ? state.progress.total : (file?.size ?? 0);
  const loaded = state.phase === 'sending' ? state.progress.loaded : state.phase === 'idle' ? 0 : total;
  const percent = total > 0 ? Math.floor((loaded / total) * 100) : 0;
  return (
    <>
      {(state.phase === 'sending' || state.phase === 'completing') && (
        <progress max={total || 1} value={loaded} aria-label="Upload progress" />
      )}
      <p role="status" className="hint">
        {state.phase === 'sending' && `Sending: ${humanSize(loaded)} of ${humanSize(total)} (${percent}%)`}
        {state.phase === 'completing' && 'Sent; completing the file…'}
        {state.phase === 'done' &&
          `Uploaded ${state.file.filename} (${humanSize(state.file.size)}); the file is ${state.file.status}.`}
        {state.phase === 'cancelled' && 'Upload cancelled; nothing was kept.'}
      </p>
    </>
  );
}
