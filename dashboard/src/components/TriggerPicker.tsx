import { triggerSearchQuery } from '../api/triggers';
import { SearchPicker, type PickerWords } from './SearchPicker';

const WORDS: PickerWords = {
  label: 'Trigger',
  find: 'Find a trigger',
  placeholder: 'name',
  one: 'trigger',
  many: 'triggers',
};

/** A choice of one trigger among an organization's thousands: the TRIGGER_PICKS whose name holds what is typed. */
export function TriggerPicker(props: {
  orgId: string;
  /** The chosen trigger's id, or '' for none. */
  value: string;
  /** Its name, when known (else its short id stands in). */
  valueName: string | undefined;
  onChange: (id: string) => void;
  /** What the select says for no trigger. */
  none: string;
}) {
  const { orgId, ...rest } = props;
  return <SearchPicker {...rest} search={(text) => triggerSearchQuery(orgId, text)} words={WORDS} />;
}
