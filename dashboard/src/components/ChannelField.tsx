import { FieldError, type FieldErrors } from './FieldErrors';

/**
 * The channel a release is published on or a device is bound to: empty means the application's
 * default, which the field shows as its placeholder.
 */
export function ChannelField(props: {
  value: string;
  onChange: (channel: string) => void;
  defaultChannel: string;
  errors: FieldErrors;
  idPrefix: string;
}) {
  const { errors, idPrefix } = props;
  return (
    <div className="field">
      <label htmlFor={errors.props('channel').id}>Channel</label>
      <input
        {...errors.props('channel')}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        placeholder={props.defaultChannel}
      />
      <span className="hint">empty: the application&apos;s default ({props.defaultChannel})</span>
      <FieldError errors={errors} field="channel" idPrefix={idPrefix} />
    </div>
  );
}
