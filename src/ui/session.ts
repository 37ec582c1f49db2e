import { createContext, useContext } from 'react';
import type { SessionInfo } from '../serve/ui/api-types.js';

/** The server's session answer; undefined until it arrives. */
export const SessionContext = createContext<SessionInfo | undefined>(undefined);

/** Whether this server answers gates, cancels and resumes. */
export function useActionsAllowed(): boolean {
  return useContext(SessionContext)?.actions === true;
}
