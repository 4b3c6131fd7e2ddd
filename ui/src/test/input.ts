// A person's input in the component tests, each step followed by the answers it set off.
import { act, fireEvent, screen } from "@testing-library/react";

/** Lets every pending answer (fingerprints, the clicks' decisions, submits) land. */
export const settle = () => act(async () => new Promise<void>((resolve) => setTimeout(resolve, 0)));

/** Types `value` into the field with the test id, then lets what it set off land. */
export async function type(testId: string, value: string) {
  fireEvent.change(screen.getByTestId(testId), { target: { value } });
  await settle();
}

/** Clicks the element with the test id, then lets what it set off land. */
export async function click(testId: string) {
  fireEvent.click(screen.getByTestId(testId));
  await settle();
}
