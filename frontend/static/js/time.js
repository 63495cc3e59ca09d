// Bi-temporal time in the browser: the one definition of which facts are visible, and
// the parsing of the API's timestamps. No DOM here, so that Node can import it too:
//   node --input-type=module -e "import {visible} from './frontend/static/js/time.js'"

// The far end of time: an open interval ends here.
export const NEVER = Number.POSITIVE_INFINITY;

// Milliseconds since the epoch of an ISO timestamp; NEVER for none (or an unreadable one).
export function ms(value) {
  if (value === null || value === undefined) return NEVER;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? NEVER : parsed;
}

// Whether a fact holds at valid time `validAt` as known at system time `knownAt`
// (the visibility rule of kgapp/graph/time.py, as in kgapp.graph.queries._VISIBLE):
//   valid_at <= validAt < invalid_at   and   created_at <= knownAt < expired_at
// Times are milliseconds since the epoch; a null or undefined invalid_at / expired_at is
// an open end (never).
export function visible(fact, validAt, knownAt) {
  return fact.valid_at <= validAt && validAt < (fact.invalid_at ?? NEVER)
    && fact.created_at <= knownAt && knownAt < (fact.expired_at ?? NEVER);
}

// <input type=datetime-local> values read and written as UTC (the pages show UTC, as the
// API does). inputMoment: the ISO instant a value names, or null when it names none.
export function inputMoment(value) {
  const moment = Date.parse(`${value}Z`);
  return Number.isNaN(moment) ? null : new Date(moment).toISOString();
}

// The value that shows `moment` (milliseconds or an ISO timestamp), to the second.
export function inputValue(moment) {
  return new Date(moment).toISOString().slice(0, 19);
}
